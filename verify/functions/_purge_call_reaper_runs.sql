-- Verify call_timeout_reaper:functions/_purge_call_reaper_runs on pg

BEGIN;

DO $$
DECLARE
    f pg_catalog.pg_proc;
BEGIN
    SELECT * INTO STRICT f FROM pg_catalog.pg_proc
     WHERE oid = 'messenger._purge_call_reaper_runs(timestamptz, integer)'::regprocedure;
    ASSERT f.prosecdef, '_purge_call_reaper_runs must be SECURITY DEFINER';
    ASSERT f.proconfig @> ARRAY['search_path=pg_catalog, pg_temp'], '_purge_call_reaper_runs must pin search_path';
    ASSERT pg_catalog.pg_get_userbyid(f.proowner) = 'messenger_call_reaper_owner',
        '_purge_call_reaper_runs must be owned by messenger_call_reaper_owner';
    ASSERT NOT pg_catalog.has_function_privilege('public', f.oid, 'EXECUTE'),
        'PUBLIC must not be able to purge the run ledger';
END
$$;

ROLLBACK;
