-- Verify call_timeout_reaper:functions/call_reaper_metrics on pg

BEGIN;

DO $$
DECLARE
    f pg_catalog.pg_proc;
BEGIN
    SELECT * INTO STRICT f FROM pg_catalog.pg_proc
     WHERE oid = 'messenger.call_reaper_metrics()'::regprocedure;
    ASSERT f.prosecdef, 'call_reaper_metrics must be SECURITY DEFINER';
    ASSERT f.proconfig @> ARRAY['search_path=pg_catalog, pg_temp'], 'call_reaper_metrics must pin search_path';
    ASSERT pg_catalog.pg_get_userbyid(f.proowner) = 'messenger_call_reaper_owner',
        'call_reaper_metrics must be owned by messenger_call_reaper_owner';
    ASSERT pg_catalog.has_function_privilege('messenger_call_reaper_monitor', f.oid, 'EXECUTE'),
        'messenger_call_reaper_monitor must be able to read the metrics';
    ASSERT NOT pg_catalog.has_function_privilege('public', f.oid, 'EXECUTE'),
        'PUBLIC must not be able to read the metrics';
END
$$;

-- Exactly one row, or the exporter has nothing to publish.
SELECT 1 / (count(*) = 1)::integer FROM messenger.call_reaper_metrics();

ROLLBACK;
