-- Verify call_timeout_reaper:functions/resume_call_reaper on pg

BEGIN;

DO $$
DECLARE
    f pg_catalog.pg_proc;
BEGIN
    SELECT * INTO STRICT f FROM pg_catalog.pg_proc WHERE oid = 'messenger.resume_call_reaper()'::regprocedure;
    IF f.prosecdef THEN
        RAISE EXCEPTION 'resume_call_reaper must be SECURITY INVOKER (the caller''s UPDATE right decides)';
    END IF;
    IF pg_catalog.has_function_privilege('public', f.oid, 'EXECUTE')
       OR pg_catalog.has_function_privilege('messenger_call_reaper', f.oid, 'EXECUTE') THEN
        RAISE EXCEPTION 'neither PUBLIC nor the job role may execute resume_call_reaper';
    END IF;
END
$$;

ROLLBACK;
