-- Deploy call_timeout_reaper:functions/call_reaper_metrics to pg

BEGIN;

-- messenger.call_reaper_metrics()
--
-- Everything one Prometheus scrape needs, as one row read in one snapshot (a STABLE function's
-- statements all see its caller's; the exporter costs one round trip): the cumulative counters and
-- histograms the reaper keeps in messenger.call_reaper_counters, the skipped-run total (purged
-- ones plus those still in the ledger), the active backlog per phase, the quarantine size and
-- the settings an alert needs to turn "intervals" into seconds.
--
-- Backlog = active calls already past their window at now(), per phase of
-- messenger.call_reaper_phases() (its status, and its window: the setting its timeout_setting
-- names), with the reaper's own due rule (messenger.call_is_due at the cutoff), so it is
-- exactly what the next cycle would find due if it had no batch limit. Each count is a range
-- scan of ix_call_due (status, started_at) that stops at the cutoff: ended calls and calls that
-- started inside the window are not read; the Answered count also reads the calls still talking
-- that started before the window (their updated_at is tested on the way). PL/pgSQL for the status: a variable of the column's type (the product's may be
-- an enum, which a text value from the phase table cannot be compared with) keeps the count an
-- index range of ix_call_due, which a cast of the column to text would not.
-- Quarantined calls are still counted: they are overdue and not closed. The quarantine size
-- counts the rows whose call still exists (after a TRUNCATE or DELETE of calls, their rows go
-- as their backoff expires, _reap_claim's retry lane).
-- Idle runs: an idle cycle with an as_of leaves only its ledger row (_reap_ledger); the completed
-- runs the ledger holds after counters.idle_folded_through are added to the run and
-- cycle-duration totals here (at most an hour of them). An idle cycle on the clock (the job's)
-- leaves no row: idle_cycles is the unlogged count of them (messenger.call_reaper_idle_cycles,
-- the exporter's run_total{result="idle"}, so the liveness alert sees idle cycles), and the
-- end of the last one (messenger.call_reaper_idle_cycle_at) counts for last_run_at and
-- last_success_at. A standby cannot read an unlogged sequence: idle_cycles is NULL there, and
-- after a crash or a failover both start again (a counter reset, as Prometheus expects).
-- runs_completed keeps its 2.0.0 meaning, every completed cycle, so it includes idle_cycles: the
-- 2.0.0 exporter reads only runs_completed, runs_skipped and runs_rolled_back for run_total,
-- and without them its CallReaperNotRunning would page on an idle server. This exporter serves
-- runs_completed - idle_cycles as result="completed" (durable) beside result="idle".
--
-- The single-runner lock (messenger.call_reaper_lock_holder, one home for who holds it and
-- since when): how long it has been held as best known (0 when free or when nothing is known),
-- whether the warden that saw its holder may end it, and lock_ttl, so an alert can tell a
-- holder nobody will end (a superuser's session, or no warden with scheduler=none).
-- The pg_cron jobs (messenger.call_reaper_jobs): per job, whether its last finished run failed,
-- NULL when unknown (no run yet, not visible to the deployer, no pg_cron), so a job that is
-- scheduled but cannot run (libpq mode without an authentication rule) raises an alert.
--
-- SECURITY DEFINER so the exporter's role (messenger_call_reaper_monitor) needs EXECUTE on this
-- function and nothing else: it never gets a privilege on a call, outbox or state table. It
-- runs as messenger_call_reaper_owner, which already reads those tables for the reaper; it
-- returns counts only, never a call's row. search_path is pinned and every name qualified.
-- Read-only, takes no locks beyond AccessShare; safe to call as often as scrapes come.
-- jit = off: the singleton tables are not analyzed until autovacuum gets to them, and until then
-- their page counts make the planner estimate about 50 million for this statement, far past the
-- JIT thresholds: it then spent 1.4 s compiling what runs in a millisecond, past the exporter's
-- statement timeout (tests/python/test_jit.py).
-- Citus (a coordinator whose call_sessions is distributed): the backlog counts run across the
-- shards as they are; quarantined adds the rows of every worker's quarantine, where the fan-out
-- keeps them (one connection per worker per scrape, as the owner, which must log in there).
-- A new column changes the row type, which CREATE OR REPLACE cannot: dropped and created again,
-- its grants given again below.
DROP FUNCTION IF EXISTS messenger.call_reaper_metrics();

CREATE FUNCTION messenger.call_reaper_metrics()
RETURNS TABLE (
    runs_completed          bigint,
    runs_skipped            bigint,
    runs_rolled_back        bigint,
    items_missed            bigint,
    items_failed            bigint,
    items_poisoned          bigint,
    skip_locked             bigint,
    errors                  bigint,
    cycle_duration_bounds   double precision[],
    cycle_duration_buckets  bigint[],
    cycle_duration_count    bigint,
    cycle_duration_sum      double precision,
    reap_lag_bounds         double precision[],
    reap_lag_buckets        bigint[],
    reap_lag_count          bigint,
    reap_lag_sum            double precision,
    last_run_at             timestamptz,
    last_success_at         timestamptz,
    backlog_ring_timeout    bigint,
    backlog_stale_answered  bigint,
    quarantined             bigint,
    polling_interval        interval,
    lock_held_seconds       double precision,
    lock_warden_can_end     boolean,
    lock_ttl                interval,
    job_failing_reaper      boolean,
    job_failing_purge       boolean,
    job_failing_warden      boolean,
    idle_cycles             bigint)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    v_phase   record;
    v_status  messenger.call_sessions.status%TYPE;   -- text, varchar or the service's enum
    v_backlog jsonb := '{}'::jsonb;                   -- phase -> count
    v_on_workers bigint := 0::bigint;                       -- quarantined on Citus workers
    v_idle_cycles bigint;
    v_idle_at timestamptz;
BEGIN
    -- pg_sequence_last_value: NULL before the first value and after a crash reset.
    IF NOT pg_catalog.pg_is_in_recovery() THEN
        BEGIN
            v_idle_cycles := coalesce(pg_catalog.pg_sequence_last_value('messenger.call_reaper_idle_cycles'::regclass), 0::bigint);
            v_idle_at := pg_catalog.to_timestamp(
                (pg_catalog.pg_sequence_last_value('messenger.call_reaper_idle_cycle_at'::regclass) / 1000.0)::double precision);
        EXCEPTION WHEN internal_error OR data_corrupted THEN
            -- Unreadable after a promotion (messenger._reap_ledger): idle cycles are in the ledger.
            v_idle_cycles := NULL;
            v_idle_at := NULL;
        END;
    END IF;
    -- The cutoffs are computed first, outside the counts, so each count is planned as one index
    -- range scan whatever the (never analyzed) singleton tables are estimated to hold.
    FOR v_phase IN
        SELECT p.phase, p.status, now() - (to_jsonb(st) ->> p.timeout_setting)::interval AS cutoff
          FROM messenger.call_reaper_phases() AS p
         CROSS JOIN messenger.call_reaper_settings AS st
    LOOP
        v_status := v_phase.status;
        v_backlog := v_backlog || jsonb_build_object(v_phase.phase,
            (SELECT count(*) FROM messenger.call_sessions AS c
              WHERE c.status = v_status
                AND messenger.call_is_due(c.status, c.started_at, c.updated_at, v_phase.cutoff)));
    END LOOP;

    -- On a Citus coordinator the fan-out quarantines poison on the worker that holds it
    -- (messenger._reap_local_pairs): those rows are counted there, one connection per worker.
    -- A worker that does not answer adds nothing; the reaper's own runs report it failing.
    IF messenger._call_reaper_distributed() THEN
        -- plpgsql_check parses a constant EXECUTE against this server, which may have no Citus.
        PERFORM 'PRAGMA:disable:check';
        EXECUTE $q$SELECT coalesce(sum(w.result::bigint) FILTER (WHERE w.success), 0)
                     FROM pg_catalog.run_command_on_workers('SELECT count(*) FROM messenger.call_reaper_quarantine') AS w$q$
           INTO v_on_workers;
        PERFORM 'PRAGMA:enable:check';
    END IF;

    RETURN QUERY
WITH s AS MATERIALIZED (
    SELECT st.polling_interval,
           st.lock_ttl
      FROM messenger.call_reaper_settings AS st
), lk AS MATERIALIZED (
    SELECT h.held_since, h.warden_can_end
      FROM messenger.call_reaper_lock_holder() AS h
     ORDER BY h.held_since NULLS LAST
     LIMIT 1
), jobs AS MATERIALIZED (
    SELECT j.kind, j.failing FROM messenger.call_reaper_jobs() AS j
), idle AS MATERIALIZED (
    -- The fold point as one value, so the runs after it are a range of ix_call_reaper_runs_started_at:
    -- joined to the counters row, the plan walked the whole ledger (a week of runs is 40,000)
    -- and probed the counters row once per run. The upper bound excludes nothing; with a bound
    -- on each side the planner costs a narrow range (one bound alone: a third of the ledger,
    -- read sequentially). pgTAP ledger_fold_cost.
    SELECT r.duration_ms::double precision / 1000 AS seconds, r.finished_at
      FROM messenger.call_reaper_runs AS r
     WHERE r.started_at > (SELECT c.idle_folded_through FROM messenger.call_reaper_counters AS c WHERE c.singleton)
       AND r.started_at < 'infinity'
       AND r.lock_acquired AND r.result = 'completed'
)
SELECT k.runs_completed + (SELECT count(*) FROM idle) + coalesce(v_idle_cycles, 0::bigint),
       k.runs_skipped_purged
           + (SELECT count(*) FROM messenger.call_reaper_runs AS r WHERE r.result = 'skipped'),
       k.runs_rolled_back,
       k.items_missed,
       k.items_failed,
       k.items_poisoned,
       k.skip_locked,
       k.errors,
       k.cycle_duration_bounds,
       ARRAY(SELECT b.n + (SELECT count(*) FROM idle AS i WHERE i.seconds <= b.le)
               FROM unnest(k.cycle_duration_buckets, k.cycle_duration_bounds) WITH ORDINALITY AS b (n, le, o)
              ORDER BY b.o),
       k.cycle_duration_count + (SELECT count(*) FROM idle),
       k.cycle_duration_sum + coalesce((SELECT sum(i.seconds) FROM idle AS i), 0),
       k.reap_lag_bounds,
       k.reap_lag_buckets,
       k.reap_lag_count,
       k.reap_lag_sum,
       greatest(k.last_run_at, (SELECT max(i.finished_at) FROM idle AS i), v_idle_at),
       greatest(k.last_success_at, (SELECT max(i.finished_at) FROM idle AS i), v_idle_at),
       (v_backlog ->> 'ring_timeout')::bigint,
       (v_backlog ->> 'stale_answered')::bigint,
       -- The quarantine's ids as one array, not a join: Citus refuses a join of a distributed
       -- table with a local one.
       (SELECT count(*) FROM messenger.call_sessions AS c
         WHERE c.call_id = ANY (ARRAY(SELECT q.call_id FROM messenger.call_reaper_quarantine AS q)))
           + v_on_workers,
       s.polling_interval,
       coalesce((SELECT greatest(extract(epoch FROM now() - lk.held_since)::double precision, 0) FROM lk), 0),
       coalesce((SELECT lk.warden_can_end FROM lk), false),
       s.lock_ttl,
       (SELECT j.failing FROM jobs AS j WHERE j.kind = 'reaper'),
       (SELECT j.failing FROM jobs AS j WHERE j.kind = 'purge'),
       (SELECT j.failing FROM jobs AS j WHERE j.kind = 'warden'),
       v_idle_cycles
  FROM messenger.call_reaper_counters AS k
 CROSS JOIN s;
END
$$;

COMMENT ON FUNCTION messenger.call_reaper_metrics() IS
$$One row for one Prometheus scrape of the call-timeout reaper: cumulative run/item/error counters, cycle-duration and reap-lag histograms (cumulative buckets against their bounds), last run and last success, the active backlog per phase (active calls past their configured window at now()), the quarantine size, the polling interval, and the single-runner lock: seconds held as best known (0 when free), whether the lock warden may end its holder, lock_ttl; per pg_cron job whether its last finished run failed; idle cycles on the clock, which leave no ledger row (NULL on a standby; also in runs_completed, which counts every completed cycle). Counts only, no call rows. Usage: SELECT * FROM messenger.call_reaper_metrics();$$;

REVOKE ALL ON FUNCTION messenger.call_reaper_metrics() FROM PUBLIC;
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER FUNCTION messenger.call_reaper_metrics() OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;
GRANT EXECUTE ON FUNCTION messenger.call_reaper_metrics() TO messenger_call_reaper_monitor;
-- The operator's, which grants/call_reaper_operator gave the function this replaces.
GRANT EXECUTE ON FUNCTION messenger.call_reaper_metrics() TO messenger_call_reaper_operator;

COMMIT;
