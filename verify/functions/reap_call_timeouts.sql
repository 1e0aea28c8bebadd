-- Verify call_timeout_reaper:functions/reap_call_timeouts on pg

BEGIN;

DO $$
DECLARE
    f pg_catalog.pg_proc;
BEGIN
    SELECT * INTO STRICT f FROM pg_catalog.pg_proc
     WHERE oid = 'messenger.reap_call_timeouts(integer, interval, interval, timestamptz)'::regprocedure;
    IF NOT coalesce(f.prosecdef, false) THEN
        RAISE EXCEPTION 'reap_call_timeouts must be SECURITY DEFINER';
    END IF;
    IF NOT coalesce(f.proconfig @> ARRAY['search_path=pg_catalog, pg_temp'], false) THEN
        RAISE EXCEPTION 'reap_call_timeouts must pin search_path';
    END IF;
    IF NOT coalesce(pg_catalog.pg_get_userbyid(f.proowner) = 'messenger_call_reaper_owner', false) THEN
        RAISE EXCEPTION 'reap_call_timeouts must be owned by messenger_call_reaper_owner';
    END IF;
    IF NOT coalesce(pg_catalog.has_function_privilege('messenger_call_reaper', f.oid, 'EXECUTE'), false) THEN
        RAISE EXCEPTION 'messenger_call_reaper must be able to run the reaper';
    END IF;
    IF NOT coalesce(NOT pg_catalog.has_function_privilege('public', f.oid, 'EXECUTE'), false) THEN
        RAISE EXCEPTION 'PUBLIC must not be able to run the reaper';
    END IF;
END
$$;

ROLLBACK;
