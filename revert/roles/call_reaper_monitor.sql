-- Revert call_timeout_reaper:roles/call_reaper_monitor from pg

BEGIN;

DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'messenger_call_reaper_monitor') THEN
        DROP OWNED BY messenger_call_reaper_monitor;
        DROP ROLE messenger_call_reaper_monitor;
    END IF;
END
$$;

COMMIT;
