-- Revert call_timeout_reaper:grants/call_sessions from pg
-- What the reaper never grants is the product's and stays. SELECT held WITH GRANT
-- OPTION is kept; a table-level REVOKE SELECT also takes every column's SELECT, so the owner
-- role's column SELECTs (never the reaper's) are given back.

BEGIN;

REVOKE UPDATE (status, end_reason, ended_at, updated_at, duration_seconds)
    ON messenger.call_sessions FROM messenger_call_reaper_owner;
DO $$
DECLARE
    v_columns text := (SELECT pg_catalog.string_agg(pg_catalog.quote_ident(a.attname), ', ' ORDER BY a.attnum)
                         FROM pg_catalog.pg_attribute AS a
                        CROSS JOIN LATERAL pg_catalog.aclexplode(a.attacl) AS x
                        WHERE a.attrelid = 'messenger.call_sessions'::pg_catalog.regclass AND NOT a.attisdropped
                          AND x.grantee = 'messenger_call_reaper_owner'::pg_catalog.regrole
                          AND x.privilege_type = 'SELECT'
                          -- what the REVOKE below takes: the owner's grants (another grantor's stay)
                          AND x.grantor = (SELECT c.relowner FROM pg_catalog.pg_class AS c
                                            WHERE c.oid = 'messenger.call_sessions'::pg_catalog.regclass));
BEGIN
    -- From the ACL, not has_table_privilege, which says yes for any superuser.
    IF EXISTS (SELECT FROM pg_catalog.pg_class AS c CROSS JOIN LATERAL pg_catalog.aclexplode(c.relacl) AS x
                WHERE c.oid = 'messenger.call_sessions'::pg_catalog.regclass
                  AND x.grantee = 'messenger_call_reaper_owner'::pg_catalog.regrole AND x.grantor = c.relowner
                  AND x.privilege_type = 'SELECT' AND x.is_grantable) THEN
        RETURN;
    END IF;
    REVOKE SELECT ON messenger.call_sessions FROM messenger_call_reaper_owner;
    IF v_columns IS NOT NULL THEN
        EXECUTE pg_catalog.format('GRANT SELECT (%s) ON messenger.call_sessions TO messenger_call_reaper_owner', v_columns);
    END IF;
END
$$;

COMMIT;
