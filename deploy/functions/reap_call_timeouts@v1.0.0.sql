-- Deploy call_timeout_reaper:functions/reap_call_timeouts to pg

BEGIN;

-- messenger.reap_call_timeouts(batch_size, ring_timeout, stale_timeout, as_of)
--
-- One cycle of the call-timeout reaper, atomic: phase 1 (Ringing past ring_timeout -> Missed,
-- one CallMissed outbox row to the caller), then phase 2 (Answered with no progress for
-- stale_timeout -> Failed, one CallEnded row per party). Transitions and their outbox rows
-- commit together with the caller's transaction or not at all.
--
-- Parameters (NULL or omitted = the value in messenger.call_reaper_settings):
--   batch_size    1..10000 calls per phase per cycle (default 200), oldest due first
--   ring_timeout  (0, 1 day]   answer window (default 45 s)
--   stale_timeout (0, 30 days] stale-answered window (default 2 h)
--   as_of         the cycle's "now" (default clock_timestamp()); tests pass it instead of sleeping
-- Bad values raise SQLSTATE 22023 naming the argument, before anything is touched.
--
-- Locking: pg_try_advisory_xact_lock(messenger.call_reaper_lock_key()), the single-runner
-- lock (call_reaper_lock_key says how it shows in pg_locks). Busy: returns at once with
-- lock_acquired = false and zero counts (the skipped run is recorded). The lock is held to the
-- end of the caller's transaction, and idle_in_transaction_session_timeout is set to the
-- configured lock_ttl for the rest of that transaction, so a forgotten open transaction cannot
-- hold the lock longer than the TTL. Rows are claimed with FOR NO KEY UPDATE SKIP LOCKED: the
-- reaper never waits for the product's own commands.
--
-- Idempotent: only active calls are selected and the UPDATE re-checks the status, so a second
-- cycle over closed calls changes nothing; the outbox's unique index refuses a second push.
-- Claims and error classes: see _reap_phase. Healthy calls fill the batch before quarantined
-- ones (at most 8 per phase); poison calls (an error about the call's data, e.g. SQLSTATE
-- classes 22, 23, P0001) are bisected out, quarantined with backoff and counted. Transient and
-- systemic errors (classes 08, 40, 42, 53, 55, 57, 58, F0, XX, or one error hitting every call
-- of a phase's batch) roll back both phases: the run is recorded as failed with its SQLSTATE,
-- counted in errors, nothing is quarantined and the next cycle retries. Cancellation
-- (statement_timeout, pg_cancel_backend) is not caught and rolls back the whole cycle.
-- A cycle opens at most 64 subtransactions (its guard block and every close attempt of both
-- phases; half the attempts are kept for phase 2), so other sessions' snapshots never overflow
-- the subtransaction cache; calls left untried are counted in the ledger's deferred_count, the
-- subtransactions used in its subtransactions column. skipped_locked_count: due, not
-- quarantined calls the claims passed because another transaction held them (not capped).
--
-- SECURITY DEFINER so the job role needs only EXECUTE; it runs as messenger_call_reaper_owner,
-- which may read calls, update their transition columns, insert outbox rows and keep the
-- reaper's own state -- nothing else. search_path is pinned and every name qualified, so a
-- caller's search_path cannot redirect it.
CREATE OR REPLACE FUNCTION messenger.reap_call_timeouts(
    batch_size    integer     DEFAULT NULL,
    ring_timeout  interval    DEFAULT NULL,
    stale_timeout interval    DEFAULT NULL,
    as_of         timestamptz DEFAULT NULL)
RETURNS messenger.call_reaper_cycle
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    c_lock_key constant bigint := messenger.call_reaper_lock_key();
    c_subxact_budget constant integer := 64;
    v_started  constant timestamptz := clock_timestamp();
    v_settings messenger.call_reaper_settings;
    v_out      messenger.call_reaper_cycle;
    v_batch    integer;
    v_ring     interval;
    v_stale    interval;
    v_ring_res record;
    v_stale_res record;
    v_lags     double precision[] := '{}'::double precision[];
    v_seconds  double precision;
    v_state    text;
    v_message  text;
    v_subxacts integer;
    v_deferred integer := 0;
BEGIN
    SELECT * INTO STRICT v_settings FROM messenger.call_reaper_settings;
    v_batch := coalesce(reap_call_timeouts.batch_size, v_settings.batch_size);
    v_ring  := coalesce(reap_call_timeouts.ring_timeout, v_settings.ring_timeout);
    v_stale := coalesce(reap_call_timeouts.stale_timeout, v_settings.stale_timeout);
    v_out.as_of := coalesce(reap_call_timeouts.as_of, v_started);
    PERFORM messenger._check_reaper_options(v_batch, v_ring, v_stale, v_out.as_of);

    v_out.run_id := gen_random_uuid();
    v_out.missed_count := 0;
    v_out.failed_count := 0;
    v_out.skipped_locked_count := 0;
    v_out.poisoned_count := 0;
    v_out.lock_acquired := pg_try_advisory_xact_lock(c_lock_key);

    IF NOT v_out.lock_acquired THEN
        v_out.result := 'skipped';
        v_out.duration_ms := round(extract(epoch FROM clock_timestamp() - v_started) * 1000, 3);
        INSERT INTO messenger.call_reaper_runs
               (run_id, started_at, finished_at, as_of, result, lock_acquired, batch_size,
                ring_timeout, stale_timeout, duration_ms)
        VALUES (v_out.run_id, v_started, clock_timestamp(), v_out.as_of, v_out.result, false, v_batch,
                v_ring, v_stale, v_out.duration_ms);
        RAISE LOG 'call_reaper event=cycle_skipped run_id=% reason=lock_busy', v_out.run_id;
        RETURN v_out;
    END IF;

    PERFORM set_config('idle_in_transaction_session_timeout',
                       (extract(epoch FROM v_settings.lock_ttl) * 1000)::bigint::text, true);
    -- to_json: ISO 8601 without spaces whatever the session's DateStyle, so the line stays
    -- key=value.
    RAISE LOG 'call_reaper event=cycle_started run_id=% as_of=%', v_out.run_id,
        to_json(v_out.as_of) #>> '{}';

    -- This block is the cycle's first subtransaction; the phases share the rest of the budget,
    -- phase 1 at most half, so poison in phase 1 never starves phase 2 of attempts.
    BEGIN
        SELECT * INTO STRICT v_ring_res
          FROM messenger._reap_phase('ring_timeout', v_out.run_id, v_out.as_of, v_ring, v_batch,
                                     v_settings.polling_interval, v_settings.poison_backoff,
                                     v_settings.poison_backoff_max, (c_subxact_budget - 1) / 2);
        SELECT * INTO STRICT v_stale_res
          FROM messenger._reap_phase('stale_answered', v_out.run_id, v_out.as_of, v_stale, v_batch,
                                     v_settings.polling_interval, v_settings.poison_backoff,
                                     v_settings.poison_backoff_max,
                                     c_subxact_budget - 1 - v_ring_res.subtransactions);
        v_out.missed_count := v_ring_res.reaped;
        v_out.failed_count := v_stale_res.reaped;
        v_out.skipped_locked_count := v_ring_res.skipped_locked + v_stale_res.skipped_locked;
        v_out.poisoned_count := v_ring_res.poisoned + v_stale_res.poisoned;
        v_lags := v_ring_res.lag_seconds || v_stale_res.lag_seconds;
        v_subxacts := 1 + v_ring_res.subtransactions + v_stale_res.subtransactions;
        v_deferred := v_ring_res.deferred + v_stale_res.deferred;
        v_out.result := 'completed';
    EXCEPTION WHEN OTHERS THEN
        -- Both phases are rolled back; the run is still recorded and counted below.
        GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT;
        v_out.result := 'failed';
        -- The message is quoted (JSON string) so the line stays key=value; DETAIL, which can
        -- carry row values, is never logged.
        RAISE WARNING 'call_reaper event=cycle_rolled_back run_id=% sqlstate=% message=%',
            v_out.run_id, v_state, to_json(v_message);
    END;

    v_seconds := extract(epoch FROM clock_timestamp() - v_started)::double precision;
    v_out.duration_ms := round((v_seconds * 1000)::numeric, 3);

    INSERT INTO messenger.call_reaper_runs
           (run_id, started_at, finished_at, as_of, result, lock_acquired, batch_size, ring_timeout,
            stale_timeout, missed_count, failed_count, skipped_locked_count, poisoned_count,
            duration_ms, subtransactions, deferred_count, error_sqlstate, error_message)
    VALUES (v_out.run_id, v_started, clock_timestamp(), v_out.as_of, v_out.result, true, v_batch, v_ring,
            v_stale, v_out.missed_count, v_out.failed_count, v_out.skipped_locked_count,
            v_out.poisoned_count, v_out.duration_ms, v_subxacts, v_deferred, v_state, v_message);

    -- By its key: without a WHERE the update reads every page of the one-row table, and while
    -- any snapshot holds the row's old versions the table grows by a page every few hundred
    -- cycles (in the bench idle cycles went from 28 to 180 buffers); by key it reads a few.
    UPDATE messenger.call_reaper_counters AS k
       SET runs_completed = k.runs_completed + (v_out.result = 'completed')::integer,
           runs_rolled_back = k.runs_rolled_back + (v_out.result = 'failed')::integer,
           items_missed   = k.items_missed + v_out.missed_count,
           items_failed   = k.items_failed + v_out.failed_count,
           items_poisoned = k.items_poisoned + v_out.poisoned_count,
           skip_locked    = k.skip_locked + v_out.skipped_locked_count,
           errors         = k.errors + v_out.poisoned_count + (v_out.result = 'failed')::integer,
           cycle_duration_buckets = ARRAY(
               SELECT b.n + (v_seconds <= b.le)::integer
                 FROM unnest(k.cycle_duration_buckets, k.cycle_duration_bounds) WITH ORDINALITY AS b (n, le, i)
                ORDER BY b.i),
           cycle_duration_count = k.cycle_duration_count + 1,
           cycle_duration_sum   = k.cycle_duration_sum + v_seconds,
           reap_lag_buckets = ARRAY(
               SELECT b.n + (SELECT count(*) FROM unnest(v_lags) AS l (s) WHERE l.s <= b.le)
                 FROM unnest(k.reap_lag_buckets, k.reap_lag_bounds) WITH ORDINALITY AS b (n, le, i)
                ORDER BY b.i),
           reap_lag_count = k.reap_lag_count + cardinality(v_lags),
           reap_lag_sum   = k.reap_lag_sum + coalesce((SELECT sum(l.s) FROM unnest(v_lags) AS l (s)), 0),
           last_run_at     = clock_timestamp(),
           last_success_at = CASE WHEN v_out.result = 'completed' THEN clock_timestamp() ELSE k.last_success_at END
     WHERE k.singleton;

    RAISE LOG 'call_reaper event=cycle_completed run_id=% result=% missed=% failed=% skipped_locked=% poisoned=% deferred=% subtransactions=% duration_ms=%',
        v_out.run_id, v_out.result, v_out.missed_count, v_out.failed_count, v_out.skipped_locked_count,
        v_out.poisoned_count, v_deferred, coalesce(v_subxacts::text, 'unknown'), v_out.duration_ms;
    RETURN v_out;
END
$$;

COMMENT ON FUNCTION messenger.reap_call_timeouts(integer, interval, interval, timestamptz) IS
$$Runs one call-timeout reaper cycle: Ringing past ring_timeout -> Missed (CallMissed to the caller), then Answered idle past stale_timeout -> Failed (CallEnded to both parties), each with its outbox row in the same transaction. Arguments default (NULL) to messenger.call_reaper_settings; bad ones raise SQLSTATE 22023. Single runner via pg_try_advisory_xact_lock(messenger.call_reaper_lock_key()): busy returns lock_acquired = false at once. Rows claimed FOR NO KEY UPDATE SKIP LOCKED, batch_size per phase: healthy calls first (due in the last polling interval, then oldest due first), at most 8 quarantined calls whose backoff expired. skipped_locked_count = due, not quarantined calls the claims passed because another transaction held them (not capped). Poison calls (SQLSTATE about the call's data) are quarantined and counted; transient or systemic errors (classes 08, 40, 42, 53, 55, 57, 58, F0, XX, or one error hitting every call) fail the cycle, which the next one retries. At most 64 subtransactions per cycle. Usage: SELECT * FROM messenger.reap_call_timeouts();$$;

REVOKE ALL ON FUNCTION messenger.reap_call_timeouts(integer, interval, interval, timestamptz) FROM PUBLIC;
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER FUNCTION messenger.reap_call_timeouts(integer, interval, interval, timestamptz)
    OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;
GRANT EXECUTE ON FUNCTION messenger.reap_call_timeouts(integer, interval, interval, timestamptz)
    TO messenger_call_reaper;

COMMIT;
