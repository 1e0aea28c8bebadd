-- Revert call_timeout_reaper:grants/realtime_outbox from pg
-- Edited after its release, only to leave more of the product as it was (README, "Changing the
-- schema"): what the reaper never grants is the product's and stays. INSERT held WITH GRANT
-- OPTION is kept; a table-level REVOKE INSERT also takes every column's INSERT, so the owner
-- role's column INSERTs (never the reaper's) are given back.

BEGIN;

DO $$
DECLARE
    v_sequence text := (SELECT pg_catalog.pg_get_serial_sequence('messenger.realtime_outbox', 'id')
                          FROM pg_catalog.pg_attribute AS a
                         WHERE a.attrelid = 'messenger.realtime_outbox'::pg_catalog.regclass
                           AND a.attname = 'id' AND a.attidentity = '');
    v_columns  text := (SELECT pg_catalog.string_agg(pg_catalog.quote_ident(a.attname), ', ' ORDER BY a.attnum)
                          FROM pg_catalog.pg_attribute AS a
                         CROSS JOIN LATERAL pg_catalog.aclexplode(a.attacl) AS x
                         WHERE a.attrelid = 'messenger.realtime_outbox'::pg_catalog.regclass AND NOT a.attisdropped
                           AND x.grantee = 'messenger_call_reaper_owner'::pg_catalog.regrole
                           AND x.privilege_type = 'INSERT');
BEGIN
    IF v_sequence IS NOT NULL
       AND NOT pg_catalog.has_sequence_privilege('messenger_call_reaper_owner', v_sequence, 'USAGE WITH GRANT OPTION') THEN
        EXECUTE pg_catalog.format('REVOKE USAGE ON SEQUENCE %s FROM messenger_call_reaper_owner', v_sequence);
    END IF;
    IF pg_catalog.has_table_privilege('messenger_call_reaper_owner', 'messenger.realtime_outbox', 'INSERT WITH GRANT OPTION') THEN
        RETURN;
    END IF;
    REVOKE INSERT ON messenger.realtime_outbox FROM messenger_call_reaper_owner;
    IF v_columns IS NOT NULL THEN
        EXECUTE pg_catalog.format('GRANT INSERT (%s) ON messenger.realtime_outbox TO messenger_call_reaper_owner', v_columns);
    END IF;
END
$$;

COMMIT;
