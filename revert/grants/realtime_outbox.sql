-- Revert call_timeout_reaper:grants/realtime_outbox from pg
-- Back to the release (v1.0.0 to v1.2.0), which grants USAGE on a serial id's sequence only:
-- USAGE on an identity id's sequence is revoked, unless the owner held it before the deploy
-- (messenger.call_reaper_found lists it) or holds it WITH GRANT OPTION, which the reaper never
-- grants. A serial id's USAGE and the INSERT stay: the release grants them.

BEGIN;

DO $$
DECLARE
    v_sequence text := (SELECT pg_catalog.pg_get_serial_sequence('messenger.realtime_outbox', 'id')
                          FROM pg_catalog.pg_attribute AS a
                         WHERE a.attrelid = 'messenger.realtime_outbox'::pg_catalog.regclass
                           AND a.attname = 'id' AND a.attidentity <> '');
BEGIN
    IF v_sequence IS NULL
       OR EXISTS (SELECT FROM pg_catalog.pg_class AS c CROSS JOIN LATERAL pg_catalog.aclexplode(c.relacl) AS x
                   WHERE c.oid = v_sequence::pg_catalog.regclass
                     AND x.grantee = 'messenger_call_reaper_owner'::pg_catalog.regrole AND x.grantor = c.relowner
                     AND x.privilege_type = 'USAGE' AND x.is_grantable) THEN
        RETURN;
    END IF;
    IF pg_catalog.to_regclass('messenger.call_reaper_found') IS NOT NULL THEN
        IF EXISTS (SELECT FROM messenger.call_reaper_found AS f
                    WHERE f.kind = 'grant' AND f.role = 'messenger_call_reaper_owner'
                      AND f.object_type = 'SEQUENCE' AND f.item = 'USAGE'
                      AND pg_catalog.to_regclass(f.object_name) = v_sequence::pg_catalog.regclass) THEN
            RETURN;
        END IF;
    END IF;
    EXECUTE pg_catalog.format('REVOKE USAGE ON SEQUENCE %s FROM messenger_call_reaper_owner', v_sequence);
END
$$;

COMMIT;
