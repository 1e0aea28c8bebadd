-- Verify call_timeout_reaper:roles/call_reaper_owner on pg

BEGIN;

DO $$
DECLARE
    r pg_catalog.pg_roles;
BEGIN
    SELECT * INTO STRICT r FROM pg_catalog.pg_roles WHERE rolname = 'messenger_call_reaper_owner';
    ASSERT NOT r.rolsuper AND NOT r.rolcanlogin AND NOT r.rolcreaterole AND NOT r.rolbypassrls,
        'messenger_call_reaper_owner must be an unprivileged NOLOGIN role';
    ASSERT pg_catalog.has_schema_privilege('messenger_call_reaper_owner', 'messenger', 'USAGE'),
        'messenger_call_reaper_owner needs USAGE on schema messenger';
END
$$;

ROLLBACK;
