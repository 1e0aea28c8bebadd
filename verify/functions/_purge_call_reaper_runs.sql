-- Verify call_timeout_reaper:functions/_purge_call_reaper_runs on pg

BEGIN;

DO $$
DECLARE
    f pg_catalog.pg_proc;
BEGIN
    SELECT * INTO STRICT f FROM pg_catalog.pg_proc
     WHERE oid = 'messenger._purge_call_reaper_runs(timestamptz, integer)'::regprocedure;
    IF NOT coalesce(f.prosecdef, false) THEN
        RAISE EXCEPTION '_purge_call_reaper_runs must be SECURITY DEFINER';
    END IF;
    IF NOT coalesce(f.proconfig @> ARRAY['search_path=pg_catalog, pg_temp'], false) THEN
        RAISE EXCEPTION '_purge_call_reaper_runs must pin search_path';
    END IF;
    IF NOT coalesce(pg_catalog.pg_get_userbyid(f.proowner) = 'messenger_call_reaper_owner', false) THEN
        RAISE EXCEPTION '_purge_call_reaper_runs must be owned by messenger_call_reaper_owner';
    END IF;
    IF NOT coalesce(NOT pg_catalog.has_function_privilege('public', f.oid, 'EXECUTE'), false) THEN
        RAISE EXCEPTION 'PUBLIC must not be able to purge the run ledger';
    END IF;
    IF pg_catalog.has_function_privilege('messenger_call_reaper', f.oid, 'EXECUTE') THEN
        RAISE EXCEPTION 'messenger_call_reaper must not be able to purge the ledger';
    END IF;
END
$$;

ROLLBACK;
