-- Revert call_timeout_reaper:grants/realtime_outbox from pg
-- What the reaper never grants is the product's and stays: USAGE on the sequence behind id
-- (serial or identity) and INSERT held WITH GRANT OPTION are kept; a table-level REVOKE INSERT
-- also takes every column's INSERT, so the owner role's column INSERTs (never the reaper's) are
-- given back. A plain grant the role held before the deploy is given back by the last revert
-- (requires/messenger_tables, from messenger.call_reaper_found).

BEGIN;

DO $$
DECLARE
    v_sequence text := (SELECT pg_catalog.pg_get_serial_sequence('messenger.realtime_outbox', 'id')
                          FROM pg_catalog.pg_attribute AS a
                         WHERE a.attrelid = 'messenger.realtime_outbox'::pg_catalog.regclass
                           AND a.attname = 'id');
    v_columns  text := (SELECT pg_catalog.string_agg(pg_catalog.quote_ident(a.attname), ', ' ORDER BY a.attnum)
                          FROM pg_catalog.pg_attribute AS a
                         CROSS JOIN LATERAL pg_catalog.aclexplode(a.attacl) AS x
                         WHERE a.attrelid = 'messenger.realtime_outbox'::pg_catalog.regclass AND NOT a.attisdropped
                           AND x.grantee = 'messenger_call_reaper_owner'::pg_catalog.regrole
                           AND x.privilege_type = 'INSERT'
                           -- what the REVOKE below takes: the owner's grants (another grantor's stay)
                           AND x.grantor = (SELECT c.relowner FROM pg_catalog.pg_class AS c
                                             WHERE c.oid = 'messenger.realtime_outbox'::pg_catalog.regclass));
BEGIN
    -- Grant options from the ACLs, not has_*_privilege, which say yes for any superuser.
    IF v_sequence IS NOT NULL
       AND NOT EXISTS (SELECT FROM pg_catalog.pg_class AS c CROSS JOIN LATERAL pg_catalog.aclexplode(c.relacl) AS x
                        WHERE c.oid = v_sequence::pg_catalog.regclass
                          AND x.grantee = 'messenger_call_reaper_owner'::pg_catalog.regrole AND x.grantor = c.relowner
                          AND x.privilege_type = 'USAGE' AND x.is_grantable) THEN
        EXECUTE pg_catalog.format('REVOKE USAGE ON SEQUENCE %s FROM messenger_call_reaper_owner', v_sequence);
    END IF;
    IF EXISTS (SELECT FROM pg_catalog.pg_class AS c CROSS JOIN LATERAL pg_catalog.aclexplode(c.relacl) AS x
                WHERE c.oid = 'messenger.realtime_outbox'::pg_catalog.regclass
                  AND x.grantee = 'messenger_call_reaper_owner'::pg_catalog.regrole AND x.grantor = c.relowner
                  AND x.privilege_type = 'INSERT' AND x.is_grantable) THEN
        RETURN;
    END IF;
    REVOKE INSERT ON messenger.realtime_outbox FROM messenger_call_reaper_owner;
    IF v_columns IS NOT NULL THEN
        EXECUTE pg_catalog.format('GRANT INSERT (%s) ON messenger.realtime_outbox TO messenger_call_reaper_owner', v_columns);
    END IF;
END
$$;

COMMIT;
