-- Verify call_timeout_reaper:roles/call_reaper_owner on pg

BEGIN;

DO $$
DECLARE
    r pg_catalog.pg_roles;
BEGIN
    SELECT * INTO STRICT r FROM pg_catalog.pg_roles WHERE rolname = 'messenger_call_reaper_owner';
    IF NOT coalesce(NOT r.rolsuper AND NOT r.rolcanlogin AND NOT r.rolcreaterole AND NOT r.rolbypassrls, false) THEN
        RAISE EXCEPTION 'messenger_call_reaper_owner must be an unprivileged NOLOGIN role';
    END IF;
    IF NOT coalesce(pg_catalog.has_schema_privilege('messenger_call_reaper_owner', 'messenger', 'USAGE'), false) THEN
        RAISE EXCEPTION 'messenger_call_reaper_owner needs USAGE on schema messenger';
    END IF;
END
$$;

ROLLBACK;
