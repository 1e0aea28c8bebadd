-- Verify call_timeout_reaper:functions/preview_call_timeouts on pg

BEGIN;

DO $$
DECLARE
    f pg_catalog.pg_proc;
BEGIN
    SELECT * INTO STRICT f FROM pg_catalog.pg_proc
     WHERE oid = 'messenger.preview_call_timeouts(integer, interval, interval, timestamptz)'::regprocedure;
    IF NOT coalesce(f.provolatile = 's', false) THEN
        RAISE EXCEPTION 'preview_call_timeouts must be STABLE (it changes nothing)';
    END IF;
END
$$;

ROLLBACK;
