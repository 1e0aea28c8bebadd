-- Verify call_timeout_reaper:roles/call_reaper on pg

BEGIN;

DO $$
DECLARE
    r pg_catalog.pg_roles;
BEGIN
    SELECT * INTO STRICT r FROM pg_catalog.pg_roles WHERE rolname = 'messenger_call_reaper';
    IF NOT coalesce(r.rolcanlogin AND NOT r.rolsuper AND NOT r.rolcreaterole AND NOT r.rolbypassrls, false) THEN
        RAISE EXCEPTION 'messenger_call_reaper must be a LOGIN role without privileges';
    END IF;
    IF NOT coalesce(r.rolconfig @> ARRAY['statement_timeout=30s', 'idle_in_transaction_session_timeout=1min'], false) THEN
        RAISE EXCEPTION 'messenger_call_reaper must carry the max run duration and the lock TTL';
    END IF;
END
$$;

ROLLBACK;
