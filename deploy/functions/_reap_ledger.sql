-- Deploy call_timeout_reaper:functions/_reap_ledger to pg

BEGIN;

-- Contract: what a cycle that took the lock leaves behind, once its phases ran or rolled back:
-- its row of messenger.call_reaper_runs and the fold into messenger.call_reaper_counters (its
-- log record is messenger._reap_cycle's). Runs inside the cycle's transaction, as its owner.
--   p_cycle     the cycle's outcome (run id, counts, as_of, result, duration_ms)
--   p_started   when the cycle started (the ledger's started_at; idle runs up to it are folded)
--   p_settings  the settings the cycle ran with, the arguments laid over (batch and windows)
--   p_lags      seconds from each closed call's deadline to the cycle's as_of (reap_lag)
--   p_subxacts, p_deferred  subtransactions opened and calls left untried (NULL: failed)
--   p_state, p_message      the SQLSTATE and message of a failed cycle, NULL otherwise
-- An idle cycle (completed, nothing closed, poisoned, passed or deferred) on the clock (no as_of:
-- the job's ticks and deadline wakes, the app-side loop, reap_call_timeouts() by hand) writes
-- nothing: it takes the next value of the unlogged sequence messenger.call_reaper_idle_cycles and
-- sets messenger.call_reaper_idle_cycle_at to its end, neither of which is WAL or needs a
-- transaction id, so a server where nothing rings gets no WAL from the reaper (it was a ledger
-- row, two index entries and a commit a cycle).
-- Counters: an idle cycle with an as_of (a DBA's or a test's) writes its ledger row only; messenger.call_reaper_metrics counts it from the ledger until a later cycle
-- folds it in (any busy cycle, or an idle one an hour after the last fold): the counters row's
-- new version would be most of an idle cycle's WAL. The fold reads the idle runs since the last
-- fold as one range of ix_call_reaper_runs_started_at (joined to the counters row, the plan
-- walked the whole ledger: pgTAP ledger_fold_cost), and updates the row by its key (without a
-- WHERE it reads every page of the one-row table, which grows while a snapshot holds old
-- versions).
-- plan_cache_mode = force_generic_plan, as on messenger._reap_pair (which this runs beside, not
-- under): with custom plans the fold was planned again every cycle, about 0.2 ms of a busy
-- cycle's 2 (bench cycle-cost); its generic plan is the same range of the ledger's index.
CREATE OR REPLACE FUNCTION messenger._reap_ledger(
    p_cycle    messenger.call_reaper_cycle,
    p_started  timestamptz,
    p_settings messenger.call_reaper_settings,
    p_lags     double precision[],
    p_subxacts integer,
    p_deferred integer,
    p_state    text,
    p_message  text)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    c_fold_every constant interval := interval '1 hour';
    v_seconds constant double precision := (p_cycle.duration_ms / 1000)::double precision;
    v_idle    constant boolean := p_cycle.result = 'completed'
        AND p_cycle.missed_count + p_cycle.failed_count + p_cycle.poisoned_count
            + p_cycle.skipped_locked_count + coalesce(p_deferred, 0) = 0;
BEGIN
    -- On the clock: _reap_cycle's as_of is its start when no as_of was given.
    IF v_idle AND p_cycle.as_of = p_started THEN
        BEGIN
            PERFORM pg_catalog.nextval('messenger.call_reaper_idle_cycles'::regclass);
            PERFORM pg_catalog.setval('messenger.call_reaper_idle_cycle_at'::regclass,
                                      (extract(epoch FROM clock_timestamp()) * 1000)::bigint);
            RETURN;
        EXCEPTION WHEN internal_error OR data_corrupted THEN
            -- An unlogged sequence can come out of a promotion unreadable ("bad magic number in
            -- sequence", PostgreSQL 15.18 after a Patroni failover: test_failover.py): the cycle
            -- is then recorded as any other, a ledger row, and said, until the sequences are
            -- created again (runbook). The subtransaction of this block takes no transaction id.
            RAISE WARNING 'call_reaper event=idle_count_unavailable sqlstate=% message=% hint=%', SQLSTATE, SQLERRM,
                'idle cycles are recorded in the ledger until the sequences are created again (runbook: "bad magic number in sequence")';
        END;
    END IF;
    INSERT INTO messenger.call_reaper_runs
           (run_id, started_at, finished_at, as_of, result, lock_acquired, batch_size, ring_timeout,
            stale_timeout, missed_count, failed_count, skipped_locked_count, poisoned_count,
            duration_ms, subtransactions, deferred_count, error_sqlstate, error_message)
    VALUES (p_cycle.run_id, p_started, clock_timestamp(), p_cycle.as_of, p_cycle.result, true,
            p_settings.batch_size, p_settings.ring_timeout, p_settings.stale_timeout,
            p_cycle.missed_count, p_cycle.failed_count, p_cycle.skipped_locked_count,
            p_cycle.poisoned_count, p_cycle.duration_ms, p_subxacts, p_deferred, p_state, p_message);

    WITH idle AS (
        SELECT r.duration_ms::double precision / 1000 AS seconds
          FROM messenger.call_reaper_runs AS r
         WHERE r.started_at > (SELECT c.idle_folded_through FROM messenger.call_reaper_counters AS c WHERE c.singleton)
           AND r.started_at < p_started
           AND r.lock_acquired AND r.result = 'completed'
    ), runs AS (
        SELECT v_seconds AS seconds
        UNION ALL
        SELECT i.seconds FROM idle AS i
    )
    UPDATE messenger.call_reaper_counters AS k
       SET runs_completed = k.runs_completed + (p_cycle.result = 'completed')::integer
                            + (SELECT count(*) FROM idle),
           runs_rolled_back = k.runs_rolled_back + (p_cycle.result = 'failed')::integer,
           items_missed   = k.items_missed + p_cycle.missed_count,
           items_failed   = k.items_failed + p_cycle.failed_count,
           items_poisoned = k.items_poisoned + p_cycle.poisoned_count,
           skip_locked    = k.skip_locked + p_cycle.skipped_locked_count,
           errors         = k.errors + p_cycle.poisoned_count + (p_cycle.result = 'failed')::integer,
           cycle_duration_buckets = ARRAY(
               SELECT b.n + (SELECT count(*) FROM runs AS r WHERE r.seconds <= b.le)
                 FROM unnest(k.cycle_duration_buckets, k.cycle_duration_bounds) WITH ORDINALITY AS b (n, le, i)
                ORDER BY b.i),
           cycle_duration_count = k.cycle_duration_count + (SELECT count(*) FROM runs),
           cycle_duration_sum   = k.cycle_duration_sum + (SELECT sum(r.seconds) FROM runs AS r),
           reap_lag_buckets = ARRAY(
               SELECT b.n + (SELECT count(*) FROM unnest(p_lags) AS l (s) WHERE l.s <= b.le)
                 FROM unnest(k.reap_lag_buckets, k.reap_lag_bounds) WITH ORDINALITY AS b (n, le, i)
                ORDER BY b.i),
           reap_lag_count = k.reap_lag_count + cardinality(p_lags),
           reap_lag_sum   = k.reap_lag_sum + coalesce((SELECT sum(l.s) FROM unnest(p_lags) AS l (s)), 0),
           last_run_at     = clock_timestamp(),
           last_success_at = CASE WHEN p_cycle.result = 'completed' THEN clock_timestamp() ELSE k.last_success_at END,
           idle_folded_through = p_started
     WHERE k.singleton
       AND (NOT v_idle OR k.idle_folded_through < p_started - c_fold_every);

END
$$;

COMMENT ON FUNCTION messenger._reap_ledger(messenger.call_reaper_cycle, timestamptz, messenger.call_reaper_settings, double precision[], integer, integer, text, text) IS
    'Private: a locked cycle''s ledger row and its fold into call_reaper_counters (idle cycles: the row only, folded hourly or by the next busy cycle; idle cycles on the clock: no row, counted in the unlogged sequences call_reaper_idle_cycles and call_reaper_idle_cycle_at).';
REVOKE ALL ON FUNCTION messenger._reap_ledger(messenger.call_reaper_cycle, timestamptz, messenger.call_reaper_settings, double precision[], integer, integer, text, text) FROM PUBLIC;
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER FUNCTION messenger._reap_ledger(messenger.call_reaper_cycle, timestamptz, messenger.call_reaper_settings, double precision[], integer, integer, text, text)
    OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;

COMMIT;
