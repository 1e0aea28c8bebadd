-- Revert call_timeout_reaper:roles/call_reaper_owner from pg

BEGIN;

DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'messenger_call_reaper_owner') THEN
        -- Grants in this database only; the role itself goes once no other database uses it.
        DROP OWNED BY messenger_call_reaper_owner;
        DROP ROLE messenger_call_reaper_owner;
    END IF;
END
$$;

COMMIT;
