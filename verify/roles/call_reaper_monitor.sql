-- Verify call_timeout_reaper:roles/call_reaper_monitor on pg

BEGIN;

DO $$
DECLARE
    r pg_catalog.pg_roles;
BEGIN
    SELECT * INTO STRICT r FROM pg_catalog.pg_roles WHERE rolname = 'messenger_call_reaper_monitor';
    IF NOT coalesce(r.rolcanlogin AND NOT r.rolsuper AND NOT r.rolcreaterole AND NOT r.rolbypassrls, false) THEN
        RAISE EXCEPTION 'messenger_call_reaper_monitor must be a LOGIN role without privileges';
    END IF;
END
$$;

ROLLBACK;
