-- Verify call_timeout_reaper:functions/call_reaper_citus_prepare on pg
-- It exists, runs as its caller, and neither the job role nor PUBLIC may run it.

BEGIN;

DO $$
DECLARE
    v_proc regprocedure := 'messenger.call_reaper_citus_prepare()';
BEGIN
    IF (SELECT p.prosecdef FROM pg_catalog.pg_proc AS p WHERE p.oid = v_proc) THEN
        RAISE EXCEPTION 'messenger.call_reaper_citus_prepare is SECURITY DEFINER';
    END IF;
    IF pg_catalog.has_function_privilege('messenger_call_reaper', v_proc, 'EXECUTE') THEN
        RAISE EXCEPTION 'the job role messenger_call_reaper may run messenger.call_reaper_citus_prepare';
    END IF;
END
$$;

ROLLBACK;
