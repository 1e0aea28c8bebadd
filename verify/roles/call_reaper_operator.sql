-- Verify call_timeout_reaper:roles/call_reaper_operator on pg
-- That the role exists; its attributes: tests/pgtap/privileges.sql.

BEGIN;

DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'messenger_call_reaper_operator') THEN
        RAISE EXCEPTION 'role messenger_call_reaper_operator does not exist';
    END IF;
END
$$;

ROLLBACK;
