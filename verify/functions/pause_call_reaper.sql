-- Verify call_timeout_reaper:functions/pause_call_reaper on pg

BEGIN;

DO $$
DECLARE
    f pg_catalog.pg_proc;
BEGIN
    SELECT * INTO STRICT f FROM pg_catalog.pg_proc WHERE oid = 'messenger.pause_call_reaper()'::regprocedure;
    IF f.prosecdef THEN
        RAISE EXCEPTION 'pause_call_reaper must be SECURITY INVOKER (the caller''s UPDATE right decides)';
    END IF;
    IF pg_catalog.has_function_privilege('public', f.oid, 'EXECUTE')
       OR pg_catalog.has_function_privilege('messenger_call_reaper', f.oid, 'EXECUTE') THEN
        RAISE EXCEPTION 'neither PUBLIC nor the job role may execute pause_call_reaper';
    END IF;
END
$$;

ROLLBACK;
