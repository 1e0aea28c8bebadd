-- Verify call_timeout_reaper:procedures/run_call_reaper_warden on pg

BEGIN;

DO $$
DECLARE
    p pg_catalog.pg_proc;
BEGIN
    SELECT * INTO STRICT p FROM pg_catalog.pg_proc
     WHERE oid = 'messenger.run_call_reaper_warden()'::regprocedure;
    IF p.prokind <> 'p' OR p.prosecdef OR p.proconfig IS NOT NULL THEN
        RAISE EXCEPTION 'run_call_reaper_warden must be an invoker procedure without SET clause (it COMMITs)';
    END IF;
    IF pg_catalog.has_function_privilege('public', p.oid, 'EXECUTE') THEN
        RAISE EXCEPTION 'PUBLIC must not be able to CALL run_call_reaper_warden';
    END IF;
END
$$;

ROLLBACK;
