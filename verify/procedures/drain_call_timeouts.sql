-- Verify call_timeout_reaper:procedures/drain_call_timeouts on pg

BEGIN;

DO $$
DECLARE
    p pg_catalog.pg_proc;
BEGIN
    SELECT * INTO STRICT p FROM pg_catalog.pg_proc
     WHERE oid = 'messenger.drain_call_timeouts(integer, integer, interval, interval, timestamptz, integer, bigint, bigint)'::regprocedure;
    IF NOT coalesce(p.prokind = 'p', false) THEN
        RAISE EXCEPTION 'drain_call_timeouts must be a procedure';
    END IF;
    IF NOT coalesce(NOT p.prosecdef AND p.proconfig IS NULL, false) THEN
        RAISE EXCEPTION 'drain_call_timeouts must be SECURITY INVOKER with no SET clause (it COMMITs)';
    END IF;
    IF NOT coalesce(NOT pg_catalog.has_function_privilege('public', p.oid, 'EXECUTE'), false) THEN
        RAISE EXCEPTION 'PUBLIC must not be able to drain';
    END IF;
END
$$;

ROLLBACK;
