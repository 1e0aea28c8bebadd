-- Revert call_timeout_reaper:roles/call_reaper_owner from pg
-- Roles are cluster-wide. Dropped only when the deploy into THIS database created it (the
-- marker in its comment, see deploy): a role that existed before was adopted and is kept, with
-- only this deploy's grant revoked (the rest went with the objects already reverted). DROP
-- OWNED BY acts on this database only; a role still used by another database is kept.
-- A grant the reaper could not have made stays, and a role the deploy's snapshot
-- (messenger.call_reaper_found) found is kept.

BEGIN;

DO $$
DECLARE
    v_found_before boolean := false;
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'messenger_call_reaper_owner') THEN
        RETURN;
    END IF;
    -- A role the deploy found (messenger.call_reaper_found) was not made by it, whatever its
    -- comment says; revert/requires/messenger_tables.sql gives back what it held.
    IF pg_catalog.to_regclass('messenger.call_reaper_found') IS NOT NULL THEN
        v_found_before := EXISTS (SELECT FROM messenger.call_reaper_found AS f
                                   WHERE f.kind = 'role' AND f.role = 'messenger_call_reaper_owner');
    END IF;
    IF NOT v_found_before AND pg_catalog.strpos(
           coalesce(pg_catalog.shobj_description(
                        (SELECT r.oid FROM pg_catalog.pg_roles AS r WHERE r.rolname = 'messenger_call_reaper_owner'),
                        'pg_authid'), ''),
           'Created by the call_timeout_reaper deploy in database ' || pg_catalog.current_database() || '.') > 0 THEN
        DROP OWNED BY messenger_call_reaper_owner;
        BEGIN
            DROP ROLE messenger_call_reaper_owner;
        EXCEPTION WHEN dependent_objects_still_exist THEN
            RAISE WARNING 'role messenger_call_reaper_owner kept: another database still uses it (%)', SQLERRM;
        END;
    ELSE
        -- USAGE held WITH GRANT OPTION was the product's (the reaper never grants one): kept.
        -- Read from the ACL, not has_schema_privilege, which says yes for any superuser.
        IF pg_catalog.to_regnamespace('messenger') IS NOT NULL
           AND NOT EXISTS (SELECT FROM pg_catalog.pg_namespace AS n
                            CROSS JOIN LATERAL pg_catalog.aclexplode(n.nspacl) AS x
                            WHERE n.nspname = 'messenger' AND x.grantee = 'messenger_call_reaper_owner'::pg_catalog.regrole
                              AND x.grantor = n.nspowner AND x.privilege_type = 'USAGE' AND x.is_grantable) THEN
            REVOKE USAGE ON SCHEMA messenger FROM messenger_call_reaper_owner;
        END IF;
        RAISE NOTICE 'role messenger_call_reaper_owner kept: it existed before this deploy';
    END IF;
END
$$;

COMMIT;
