-- Deploy call_timeout_reaper:procedures/drain_call_timeouts to pg

BEGIN;

-- messenger.drain_call_timeouts(max_cycles, batch_size, ring_timeout, stale_timeout, as_of, duty_cycle)
--
-- Catch-up after an outage: runs reaper cycles one after another, COMMITting after each, while
-- claimable overdue calls remain: it stops when a cycle claimed nothing it could act on (it
-- closed, poisoned and deferred nothing: what is left is quarantined in its backoff or held by
-- other transactions), when max_cycles cycles have run, or when a cycle rolls back. A cycle that
-- closed nothing because it met only poison goes on: those calls are now quarantined and the
-- next cycle claims the healthy ones behind them. Each cycle is an ordinary
-- messenger.reap_call_timeouts cycle (same arguments, validation, lock, ledger and counters:
-- messenger._reap_cycle, told the previous cycle's run id so that with a fixed as_of it may
-- still start where that one stopped, _reap_lanes), so
-- a drain is exactly what the job would have done, faster, in committed batch_size steps: an
-- interrupted drain keeps what it committed. A cycle skipped because the scheduled job held the
-- lock counts as one of max_cycles and is retried after 100 ms; a rolled-back cycle stops the drain
-- with a WARNING (see messenger.call_reaper_runs). Poisoned and row-locked calls are left, as
-- a cycle leaves them. Reports each cycle as a NOTICE and returns the totals.
-- duty_cycle (0, 1], default 1: the share of wall time the drain may run, the polite drain of
-- the online schema-change tools. After each cycle that leaves work it sleeps (1 - d) / d times
-- that cycle's own wall time (cycle and COMMIT): 0.5 sleeps as long as the cycle ran, 0.2 four
-- times as long. Between cycles it holds no lock and no row, so the product's statements and
-- the WAL writer have the server to themselves; the drain takes about 1/d times as long (the
-- statement_timeout of the session covers the sleeps too). Outside (0, 1]: 22023, nothing run.
-- It sleeps in naps of at most 0.1 s, each its own transaction: a sleeping statement holds a
-- snapshot, and one sleep as long as the cycle kept every call the drain had just closed from
-- being pruned, so the product's scans of its active calls walked them (docs/design.md,
-- "Scheduling").
-- SECURITY INVOKER with no SET clause, or its COMMIT would fail; run it with CALL outside a
-- transaction block. Your session's statement_timeout covers the whole CALL. A role that is not
-- a superuser needs EXECUTE on messenger._reap_cycle as well.
CREATE OR REPLACE PROCEDURE messenger.drain_call_timeouts(
    max_cycles      integer     DEFAULT 1000,
    batch_size      integer     DEFAULT NULL,
    ring_timeout    interval    DEFAULT NULL,
    stale_timeout   interval    DEFAULT NULL,
    as_of           timestamptz DEFAULT NULL,
    duty_cycle      real        DEFAULT 1,
    INOUT cycles    integer     DEFAULT NULL,
    INOUT missed    bigint      DEFAULT NULL,
    INOUT failed    bigint      DEFAULT NULL)
LANGUAGE plpgsql
AS $$
DECLARE
    v_cycle messenger.call_reaper_cycle;
    v_started timestamptz;
    v_until   timestamptz;
    v_wait    numeric;
BEGIN
    IF max_cycles IS NULL OR max_cycles NOT BETWEEN 1 AND 1000000 THEN
        RAISE EXCEPTION 'max_cycles must be between 1 and 1000000, got %', max_cycles
            USING ERRCODE = '22023', HINT = 'The default is 1000 cycles.';
    END IF;
    -- NOT (...) refuses NaN and NULL too.
    IF NOT coalesce(drain_call_timeouts.duty_cycle > 0 AND drain_call_timeouts.duty_cycle <= 1, false) THEN
        RAISE EXCEPTION 'duty_cycle must be greater than 0 and at most 1, got %', drain_call_timeouts.duty_cycle
            USING ERRCODE = '22023',
                  HINT = 'The share of wall time the drain may run: 1 (the default) never pauses, 0.5 sleeps as long as each cycle ran.';
    END IF;
    cycles := 0;
    missed := 0;
    failed := 0;
    WHILE cycles < max_cycles LOOP
        v_started := pg_catalog.clock_timestamp();
        v_cycle := messenger._reap_cycle(drain_call_timeouts.batch_size, drain_call_timeouts.ring_timeout,
                                         drain_call_timeouts.stale_timeout, drain_call_timeouts.as_of, v_cycle.run_id);
        COMMIT;
        cycles := cycles + 1;
        missed := missed + v_cycle.missed_count;
        failed := failed + v_cycle.failed_count;
        RAISE NOTICE 'drain cycle % run_id=% result=% missed=% failed=% skipped_locked=% poisoned=% duration_ms=%',
            cycles, v_cycle.run_id, v_cycle.result, v_cycle.missed_count, v_cycle.failed_count,
            v_cycle.skipped_locked_count, v_cycle.poisoned_count, v_cycle.duration_ms;
        IF v_cycle.result = 'failed' THEN
            RAISE WARNING 'drain stopped: cycle % (run_id %) failed, see messenger.call_reaper_runs',
                cycles, v_cycle.run_id;
            RETURN;
        ELSIF v_cycle.result = 'skipped' THEN
            PERFORM pg_catalog.pg_sleep(0.1);
        ELSIF v_cycle.missed_count + v_cycle.failed_count + v_cycle.poisoned_count = 0
              AND NOT EXISTS (SELECT FROM messenger.call_reaper_runs AS r
                               WHERE r.run_id = v_cycle.run_id AND r.deferred_count > 0) THEN
            RETURN;
        ELSIF drain_call_timeouts.duty_cycle < 1 AND cycles < max_cycles THEN
            v_until := pg_catalog.clock_timestamp() + (pg_catalog.clock_timestamp() - v_started)
                       * ((1 - drain_call_timeouts.duty_cycle) / drain_call_timeouts.duty_cycle);
            LOOP
                v_wait := extract(epoch FROM v_until - pg_catalog.clock_timestamp());
                EXIT WHEN v_wait <= 0;
                PERFORM pg_catalog.pg_sleep(least(v_wait, 0.1));
                COMMIT;
            END LOOP;
        END IF;
    END LOOP;
    RAISE NOTICE 'drain stopped after max_cycles = % cycles; run it again to continue', max_cycles;
END
$$;

COMMENT ON PROCEDURE messenger.drain_call_timeouts(integer, integer, interval, interval, timestamptz, real, integer, bigint, bigint) IS
$$Catch-up: runs reaper cycles with a COMMIT after each while claimable overdue calls remain (stops when a cycle closed, poisoned and deferred nothing, after max_cycles, or when a cycle fails). Returns cycles, missed, failed. duty_cycle (0, 1], default 1, is the share of wall time it may run: after each cycle it sleeps (1 - duty_cycle) / duty_cycle times that cycle's wall time. Usage: CALL messenger.drain_call_timeouts(); or CALL messenger.drain_call_timeouts(max_cycles => 50, batch_size => 1000); politely: CALL messenger.drain_call_timeouts(duty_cycle => 0.5);$$;

REVOKE ALL ON PROCEDURE messenger.drain_call_timeouts(integer, integer, interval, interval, timestamptz, real, integer, bigint, bigint) FROM PUBLIC;

COMMIT;
