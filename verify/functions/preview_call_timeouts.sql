-- Verify call_timeout_reaper:functions/preview_call_timeouts on pg

BEGIN;

DO $$
DECLARE
    f pg_catalog.pg_proc;
BEGIN
    SELECT * INTO STRICT f FROM pg_catalog.pg_proc
     WHERE oid = 'messenger.preview_call_timeouts(integer, interval, interval, timestamptz)'::regprocedure;
    ASSERT f.provolatile = 's', 'preview_call_timeouts must be STABLE (it changes nothing)';
    ASSERT NOT f.prosecdef, 'preview_call_timeouts must run with the caller''s rights';
    ASSERT NOT pg_catalog.has_function_privilege('public', f.oid, 'EXECUTE'),
        'PUBLIC must not be able to preview calls';
END
$$;

ROLLBACK;
