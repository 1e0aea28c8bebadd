-- Revert call_timeout_reaper:roles/call_reaper from pg

BEGIN;

DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'messenger_call_reaper') THEN
        DROP OWNED BY messenger_call_reaper;
        DROP ROLE messenger_call_reaper;
    END IF;
END
$$;

COMMIT;
