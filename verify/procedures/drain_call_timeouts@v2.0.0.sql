-- Verify call_timeout_reaper:procedures/drain_call_timeouts on pg
-- A procedure without SET clause (it COMMITs), with duty_cycle; its grants: tests/pgtap/privileges.sql.

BEGIN;

DO $$
BEGIN
    IF NOT coalesce((SELECT p.prokind = 'p' AND p.proconfig IS NULL FROM pg_catalog.pg_proc AS p
                      WHERE p.oid = 'messenger.drain_call_timeouts(integer, integer, interval, interval, timestamptz, real, integer, bigint, bigint)'::pg_catalog.regprocedure), false) THEN
        RAISE EXCEPTION 'drain_call_timeouts must be a procedure without SET clause (it COMMITs)';
    END IF;
END
$$;

ROLLBACK;
