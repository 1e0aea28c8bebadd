-- Verify call_timeout_reaper:procedures/drain_call_timeouts on pg

BEGIN;

DO $$
DECLARE
    p pg_catalog.pg_proc;
BEGIN
    SELECT * INTO STRICT p FROM pg_catalog.pg_proc
     WHERE oid = 'messenger.drain_call_timeouts(integer, integer, interval, interval, timestamptz, integer, bigint, bigint)'::regprocedure;
    ASSERT p.prokind = 'p', 'drain_call_timeouts must be a procedure';
    ASSERT NOT p.prosecdef AND p.proconfig IS NULL,
        'drain_call_timeouts must be SECURITY INVOKER with no SET clause (it COMMITs)';
    ASSERT NOT pg_catalog.has_function_privilege('public', p.oid, 'EXECUTE'),
        'PUBLIC must not be able to drain';
END
$$;

ROLLBACK;
