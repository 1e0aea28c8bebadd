-- Revert call_timeout_reaper:roles/call_reaper_operator from pg
-- Roles are cluster-wide. Dropped only when the deploy into THIS database created it (the
-- marker in its comment, see deploy): a role that existed before was adopted and is kept, with
-- only the grant this deploy recorded in messenger.call_reaper_footprint revoked (the rest went
-- with the objects already reverted). DROP OWNED BY acts on this database only; a role still
-- used by another database is kept.
-- A role the deploy's snapshot found is kept.

BEGIN;

DO $$
DECLARE
    v_found_before boolean := false;
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'messenger_call_reaper_operator') THEN
        RETURN;
    END IF;
    -- A role the deploy found (messenger.call_reaper_found) was not made by it, whatever its
    -- comment says; revert/requires/messenger_tables.sql gives back what it held.
    IF pg_catalog.to_regclass('messenger.call_reaper_found') IS NOT NULL THEN
        v_found_before := EXISTS (SELECT FROM messenger.call_reaper_found AS f
                                   WHERE f.kind = 'role' AND f.role = 'messenger_call_reaper_operator');
    END IF;
    IF NOT v_found_before AND pg_catalog.strpos(
           coalesce(pg_catalog.shobj_description(
                        (SELECT r.oid FROM pg_catalog.pg_roles AS r WHERE r.rolname = 'messenger_call_reaper_operator'),
                        'pg_authid'), ''),
           'Created by the call_timeout_reaper deploy in database ' || pg_catalog.current_database() || '.') > 0 THEN
        DROP OWNED BY messenger_call_reaper_operator;
        BEGIN
            DROP ROLE messenger_call_reaper_operator;
        EXCEPTION WHEN dependent_objects_still_exist THEN
            RAISE WARNING 'role messenger_call_reaper_operator kept: another database still uses it (%)', SQLERRM;
        END;
    ELSE
        -- Only the grant the deploy recorded: USAGE the role held before stays.
        IF pg_catalog.to_regclass('messenger.call_reaper_footprint') IS NOT NULL THEN
            DELETE FROM messenger.call_reaper_footprint
             WHERE (kind, target, item) = ('grant', 'SCHEMA messenger', 'USAGE TO messenger_call_reaper_operator');
            IF FOUND THEN
                REVOKE USAGE ON SCHEMA messenger FROM messenger_call_reaper_operator;
            END IF;
        END IF;
        RAISE NOTICE 'role messenger_call_reaper_operator kept: it existed before this deploy';
    END IF;
END
$$;

COMMIT;
