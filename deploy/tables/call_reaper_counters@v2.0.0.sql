-- Deploy call_timeout_reaper:tables/call_reaper_counters to pg
-- Cumulative counters live in the database so they survive exporter restarts and every
-- exporter agrees. Only the holder of the single-runner lock updates this row, so cycles never
-- contend on it. Skipped runs are counted from the run ledger instead (plus runs_skipped_purged
-- for ledger rows retention has removed). Histogram buckets are cumulative ("le") counts
-- against the fixed bounds stored beside them, exactly as Prometheus exposes them.
-- An idle cycle (it closed, poisoned, skipped and deferred nothing) leaves its run ledger row and
-- does not update this row, whose full new version is most of an idle cycle's WAL.
-- idle_folded_through says up to where the ledger's idle runs are counted here:
-- call_reaper_metrics adds the completed runs started after it, and the next cycle that updates
-- the row (any busy one, or an idle one an hour after the last fold) folds them in. Folding
-- hourly keeps those ledger rows well inside any retention (at least an hour).

BEGIN;

CREATE TABLE messenger.call_reaper_counters (
    singleton              boolean            PRIMARY KEY DEFAULT true
        CONSTRAINT call_reaper_counters_singleton CHECK (singleton),
    runs_completed         bigint             NOT NULL DEFAULT 0,
    runs_rolled_back       bigint             NOT NULL DEFAULT 0,
    runs_skipped_purged    bigint             NOT NULL DEFAULT 0,
    items_missed           bigint             NOT NULL DEFAULT 0,
    items_failed           bigint             NOT NULL DEFAULT 0,
    items_poisoned         bigint             NOT NULL DEFAULT 0,
    skip_locked            bigint             NOT NULL DEFAULT 0,
    errors                 bigint             NOT NULL DEFAULT 0,
    cycle_duration_bounds  double precision[] NOT NULL
        DEFAULT '{0.005,0.01,0.025,0.05,0.1,0.25,0.5,1,2.5,5,10,30}',
    cycle_duration_buckets bigint[]           NOT NULL DEFAULT array_fill(0::bigint, ARRAY[12]),
    cycle_duration_count   bigint             NOT NULL DEFAULT 0,
    cycle_duration_sum     double precision   NOT NULL DEFAULT 0,
    reap_lag_bounds        double precision[] NOT NULL
        DEFAULT '{1,2.5,5,10,15,20,30,60,120,300,900,3600}',
    reap_lag_buckets       bigint[]           NOT NULL DEFAULT array_fill(0::bigint, ARRAY[12]),
    reap_lag_count         bigint             NOT NULL DEFAULT 0,
    reap_lag_sum           double precision   NOT NULL DEFAULT 0,
    last_run_at            timestamptz,
    last_success_at        timestamptz,
    idle_folded_through    timestamptz        NOT NULL DEFAULT '-infinity',
    CONSTRAINT call_reaper_counters_buckets_match CHECK (
        cardinality(cycle_duration_buckets) = cardinality(cycle_duration_bounds)
        AND cardinality(reap_lag_buckets) = cardinality(reap_lag_bounds))
);

COMMENT ON TABLE messenger.call_reaper_counters IS
    'Cumulative reaper counters and histograms (one row), published by the Prometheus exporter.';
COMMENT ON COLUMN messenger.call_reaper_counters.reap_lag_sum IS
    'Seconds between a call''s due time (started_at + ring_timeout, or updated_at + stale_timeout) and its closure, summed.';

COMMENT ON COLUMN messenger.call_reaper_counters.idle_folded_through IS
    'Idle runs of the ledger started up to here are counted in this row; later ones are added by call_reaper_metrics.';

INSERT INTO messenger.call_reaper_counters (idle_folded_through) VALUES (pg_catalog.clock_timestamp());

GRANT SELECT, UPDATE ON messenger.call_reaper_counters TO messenger_call_reaper_owner;

COMMIT;
