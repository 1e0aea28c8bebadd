-- Verify call_timeout_reaper:functions/purge_call_reaper_history on pg

BEGIN;

DO $$
DECLARE
    f pg_catalog.pg_proc;
BEGIN
    SELECT * INTO STRICT f FROM pg_catalog.pg_proc
     WHERE oid = 'messenger.purge_call_reaper_history(timestamptz, integer)'::regprocedure;
    ASSERT NOT f.prosecdef, 'purge_call_reaper_history must be SECURITY INVOKER (pg_cron row-level security)';
    ASSERT pg_catalog.has_function_privilege('messenger_call_reaper', f.oid, 'EXECUTE'),
        'messenger_call_reaper must be able to purge its history';
    ASSERT NOT pg_catalog.has_function_privilege('public', f.oid, 'EXECUTE'),
        'PUBLIC must not be able to purge reaper history';
END
$$;

ROLLBACK;
