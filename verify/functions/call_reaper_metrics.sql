-- Verify call_timeout_reaper:functions/call_reaper_metrics on pg

BEGIN;

DO $$
DECLARE
    f pg_catalog.pg_proc;
BEGIN
    SELECT * INTO STRICT f FROM pg_catalog.pg_proc
     WHERE oid = 'messenger.call_reaper_metrics()'::regprocedure;
    IF NOT coalesce(f.prosecdef, false) THEN
        RAISE EXCEPTION 'call_reaper_metrics must be SECURITY DEFINER';
    END IF;
    IF NOT coalesce(f.proconfig @> ARRAY['search_path=pg_catalog, pg_temp'], false) THEN
        RAISE EXCEPTION 'call_reaper_metrics must pin search_path';
    END IF;
    IF NOT coalesce(pg_catalog.pg_get_userbyid(f.proowner) = 'messenger_call_reaper_owner', false) THEN
        RAISE EXCEPTION 'call_reaper_metrics must be owned by messenger_call_reaper_owner';
    END IF;
    IF NOT coalesce(pg_catalog.has_function_privilege('messenger_call_reaper_monitor', f.oid, 'EXECUTE'), false) THEN
        RAISE EXCEPTION 'messenger_call_reaper_monitor must be able to read the metrics';
    END IF;
    IF NOT coalesce(NOT pg_catalog.has_function_privilege('public', f.oid, 'EXECUTE'), false) THEN
        RAISE EXCEPTION 'PUBLIC must not be able to read the metrics';
    END IF;
END
$$;

-- Exactly one row, or the exporter has nothing to publish.
SELECT 1 / (count(*) = 1)::integer FROM messenger.call_reaper_metrics();

ROLLBACK;
