-- Verify call_timeout_reaper:functions/reap_call_timeouts on pg

BEGIN;

DO $$
DECLARE
    f pg_catalog.pg_proc;
BEGIN
    SELECT * INTO STRICT f FROM pg_catalog.pg_proc
     WHERE oid = 'messenger.reap_call_timeouts(integer, interval, interval, timestamptz)'::regprocedure;
    ASSERT f.prosecdef, 'reap_call_timeouts must be SECURITY DEFINER';
    ASSERT f.proconfig @> ARRAY['search_path=pg_catalog, pg_temp'], 'reap_call_timeouts must pin search_path';
    ASSERT pg_catalog.pg_get_userbyid(f.proowner) = 'messenger_call_reaper_owner',
        'reap_call_timeouts must be owned by messenger_call_reaper_owner';
    ASSERT pg_catalog.has_function_privilege('messenger_call_reaper', f.oid, 'EXECUTE'),
        'messenger_call_reaper must be able to run the reaper';
    ASSERT NOT pg_catalog.has_function_privilege('public', f.oid, 'EXECUTE'),
        'PUBLIC must not be able to run the reaper';
END
$$;

ROLLBACK;
