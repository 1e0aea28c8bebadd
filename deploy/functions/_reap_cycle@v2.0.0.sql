-- Deploy call_timeout_reaper:functions/_reap_cycle to pg

BEGIN;

-- Contract: one reaper cycle, what messenger.reap_call_timeouts(...) runs (see its header for
-- the arguments, the lock, the ledger and the error classes), plus p_after_run: the run id of
-- the previous cycle of the caller's drain or catch-up loop (messenger.drain_call_timeouts,
-- messenger.run_call_reaper_ticks), whose claim floor this cycle may trust at the same as_of
-- (_reap_lanes). NULL for a cycle run on its own.
-- Its ledger row, the counters and its cycle_completed log line: messenger._reap_ledger (a cycle
-- that took the lock); a cycle that found the lock taken writes its 'skipped' row here.
-- Who may steer it: every entry point (reap_call_timeouts, run_call_reaper_ticks, the drain, the
-- Patroni callback) comes through here, so the rule is kept here once. A caller that is not an
-- operator (a member of messenger_call_reaper_operator: the deploying role, a DBA it granted the
-- role to, a superuser) runs only the configured cycle: any batch size, timeout or as_of raises
-- 42501, and while the reaper is paused it closes nothing (result 'paused', no ledger row, no
-- lock taken). The job role is such a caller: its credential, in pg_cron or in every replica of
-- an app-side loop, cannot close live calls early or run through a pause. p_after_run is not an
-- override: without an as_of the cycle's as_of is the clock, always later than a floor's, so
-- the floor is checked as for any cycle. The caller is the session's role (SET ROLE, else the
-- login): inside a SECURITY DEFINER routine current_user is the owner, and the role GUC and
-- session_user are what the session itself chose.
-- Phases: messenger._reap_pair on the default pair (messenger.call_sessions,
-- messenger.realtime_outbox): each row of messenger.call_reaper_phases() (lanes, claim, close,
-- floor), in that order, each window the setting the row's timeout_setting names, with the arguments laid
-- over the settings. The lock and the caller rules stay here. On a Citus
-- coordinator with call_sessions distributed, messenger._reap_fanout runs _reap_pair on every
-- shard pair of every worker and adds up their sums; a worker that failed makes the run 'failed'
-- (08000, the workers named) while the others' closures, committed on their nodes, are counted.
-- SECURITY DEFINER like the reaper: the job role runs it through run_call_reaper_ticks.
CREATE OR REPLACE FUNCTION messenger._reap_cycle(
    p_batch_size    integer,
    p_ring_timeout  interval,
    p_stale_timeout interval,
    p_as_of         timestamptz,
    p_after_run     uuid)
RETURNS messenger.call_reaper_cycle
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    c_lock_key constant bigint := messenger.call_reaper_lock_key();
    c_subxact_budget constant integer := 64;
    v_started  constant timestamptz := clock_timestamp();
    v_settings messenger.call_reaper_settings;
    v_out      messenger.call_reaper_cycle := ROW(NULL::uuid, false, 0, 0, 0, 0, NULL::numeric, v_started, 'paused');
    v_res      record;
    v_lags     double precision[] := '{}'::double precision[];
    v_subxacts integer;
    v_deferred integer := 0;
    v_failures text;
    v_state    text;
    v_message  text;
    v_caller   text;
BEGIN
    SELECT * INTO STRICT v_settings FROM messenger.call_reaper_settings;
    v_caller := coalesce(nullif(pg_catalog.current_setting('role'), 'none'), session_user::text);
    IF NOT pg_catalog.pg_has_role(v_caller, 'messenger_call_reaper_operator', 'USAGE') THEN
        IF p_batch_size IS NOT NULL OR p_ring_timeout IS NOT NULL OR p_stale_timeout IS NOT NULL
           OR p_as_of IS NOT NULL THEN
            RAISE EXCEPTION 'role % may run only the configured reaper cycle: batch_size, ring_timeout, stale_timeout and as_of are operator arguments', v_caller
                USING ERRCODE = '42501',
                      HINT = 'Run messenger.reap_call_timeouts() with no arguments, or run the DBA verbs (reap_call_timeouts(...), run_call_reaper_ticks(as_of => ...), drain_call_timeouts(...)) as the deploying role or a member of messenger_call_reaper_operator.';
        END IF;
        IF v_settings.paused THEN
            v_out.duration_ms := round(extract(epoch FROM clock_timestamp() - v_started) * 1000, 3);
            RAISE LOG 'call_reaper event=cycle_skipped reason=paused role=%', v_caller;
            RETURN v_out;
        END IF;
    END IF;
    -- The arguments laid over the configured values: each phase's window is then the setting its
    -- timeout_setting names (call_reaper_phases()), which the arguments are named after.
    v_settings.batch_size := coalesce(p_batch_size, v_settings.batch_size);
    v_settings.ring_timeout := coalesce(p_ring_timeout, v_settings.ring_timeout);
    v_settings.stale_timeout := coalesce(p_stale_timeout, v_settings.stale_timeout);
    v_out.as_of := coalesce(p_as_of, v_started);
    PERFORM messenger._check_reaper_options(v_settings.batch_size, v_settings.ring_timeout, v_settings.stale_timeout, v_out.as_of);

    -- Time-ordered (the UUIDv7 layout: 48 bits of milliseconds, version 7, random): each run's
    -- ledger key lands on the last page of call_reaper_runs_pkey, so after a checkpoint one
    -- full-page image covers the next cycles' entries, instead of one image per cycle for a
    -- random key (about 8 KB of an idle cycle's WAL).
    v_out.run_id := encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
                               PLACING substring(int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
                               FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid;
    v_out.lock_acquired := pg_try_advisory_xact_lock(c_lock_key);
    IF NOT v_out.lock_acquired THEN
        v_out.result := 'skipped';
        v_out.duration_ms := round(extract(epoch FROM clock_timestamp() - v_started) * 1000, 3);
        INSERT INTO messenger.call_reaper_runs
               (run_id, started_at, finished_at, as_of, result, lock_acquired, batch_size,
                ring_timeout, stale_timeout, duration_ms)
        VALUES (v_out.run_id, v_started, clock_timestamp(), v_out.as_of, v_out.result, false, v_settings.batch_size,
                v_settings.ring_timeout, v_settings.stale_timeout, v_out.duration_ms);
        RAISE LOG 'call_reaper event=cycle_skipped run_id=% reason=lock_busy', v_out.run_id;
        RETURN v_out;
    END IF;

    PERFORM set_config('idle_in_transaction_session_timeout',
                       (extract(epoch FROM v_settings.lock_ttl) * 1000)::bigint::text, true);
    -- to_json: ISO 8601 without spaces whatever the session's DateStyle, so the line stays
    -- key=value.
    RAISE LOG 'call_reaper event=cycle_started run_id=% as_of=%', v_out.run_id,
        to_json(v_out.as_of) #>> '{}';

    -- This block is the cycle's first subtransaction; the pair's phases share the rest of the
    -- budget (messenger._reap_pair). The totals are set only once every phase ran: a phase that
    -- raises rolls the earlier ones back too.
    BEGIN
        -- An assignment, not SELECT * FROM: a simple expression is no statement of its own.
        IF messenger._call_reaper_distributed() THEN
            SELECT * INTO v_res FROM messenger._reap_fanout(v_out.run_id, v_out.as_of, to_jsonb(v_settings), c_subxact_budget - 1);
            v_failures := v_res.failures;
        ELSE
            v_res := messenger._reap_pair('messenger.call_sessions'::regclass, 'messenger.realtime_outbox'::regclass,
                                          v_out.run_id, v_out.as_of, to_jsonb(v_settings), c_subxact_budget - 1, p_after_run);
        END IF;
        v_out.missed_count := v_res.missed_count;
        v_out.failed_count := v_res.failed_count;
        v_out.skipped_locked_count := v_res.skipped_locked_count;
        v_out.poisoned_count := v_res.poisoned_count;
        v_lags := v_res.lag_seconds;
        v_subxacts := 1 + v_res.subtransactions;
        v_deferred := v_res.deferred_count;
        v_out.result := 'completed';
        -- A worker that failed: the others' closures are committed and counted, the run is failed.
        IF v_failures IS NOT NULL THEN
            v_out.result := 'failed';
            v_state := '08000';
            v_message := 'Citus workers failed: ' || v_failures;
            RAISE WARNING 'call_reaper event=cycle_worker_failed run_id=% message=%', v_out.run_id, to_json(v_message);
        END IF;
    EXCEPTION WHEN OTHERS THEN
        -- Both phases are rolled back; the run is still recorded and counted below.
        GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT;
        v_out.result := 'failed';
        -- The message is quoted (JSON string) so the line stays key=value; DETAIL, which can
        -- carry row values, is never logged.
        RAISE WARNING 'call_reaper event=cycle_rolled_back run_id=% sqlstate=% message=%',
            v_out.run_id, v_state, to_json(v_message);
    END;
    v_out.duration_ms := round(extract(epoch FROM clock_timestamp() - v_started) * 1000, 3);
    PERFORM messenger._reap_ledger(v_out, v_started, v_settings, v_lags, v_subxacts, v_deferred, v_state, v_message);
    RETURN v_out;
END
$$;

COMMENT ON FUNCTION messenger._reap_cycle(integer, interval, interval, timestamptz, uuid) IS
    'Private: one reaper cycle (messenger.reap_call_timeouts), optionally the next cycle of a drain or catch-up loop. Arguments, and a cycle while paused, are for members of messenger_call_reaper_operator (42501 / result paused otherwise).';
REVOKE ALL ON FUNCTION messenger._reap_cycle(integer, interval, interval, timestamptz, uuid) FROM PUBLIC;
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER FUNCTION messenger._reap_cycle(integer, interval, interval, timestamptz, uuid) OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;
GRANT EXECUTE ON FUNCTION messenger._reap_cycle(integer, interval, interval, timestamptz, uuid) TO messenger_call_reaper;

COMMIT;
