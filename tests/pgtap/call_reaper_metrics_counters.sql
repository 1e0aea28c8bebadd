-- call_reaper_metrics publishes the counters row column for column (runs_completed with the idle
-- cycles on the clock added, which idle_cycles counts and no ledger row holds), and counts skipped
-- runs as the purged total plus the skipped rows still in the ledger. Updating the counters row first
-- holds its lock, so the scheduled job's next cycle waits for this transaction's rollback
-- instead of changing the row under the test.
BEGIN;
SELECT plan(3);
\ir fixtures/idle_runs_folded.sql

UPDATE messenger.call_reaper_counters
   SET runs_completed = 101, runs_rolled_back = 102, runs_skipped_purged = 103,
       items_missed = 104, items_failed = 105, items_poisoned = 106,
       skip_locked = 107, errors = 108,
       cycle_duration_buckets = '{1,2,3,4,5,6,7,8,9,10,11,12}', cycle_duration_count = 13,
       cycle_duration_sum = 14.5,
       reap_lag_buckets = '{21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38}', reap_lag_count = 33,
       reap_lag_sum = 34.5,
       last_run_at = '2001-02-03 04:05:06+00', last_success_at = '2001-02-03 04:05:00+00';

SELECT results_eq($$
    SELECT runs_completed - coalesce(idle_cycles, 0), runs_rolled_back, items_missed, items_failed, items_poisoned,
           skip_locked, errors, cycle_duration_buckets, cycle_duration_count, cycle_duration_sum,
           reap_lag_buckets, reap_lag_count, reap_lag_sum, last_run_at, last_success_at
      FROM messenger.call_reaper_metrics()
$$, $$
    VALUES (101::bigint, 102::bigint, 104::bigint, 105::bigint, 106::bigint, 107::bigint,
            108::bigint, '{1,2,3,4,5,6,7,8,9,10,11,12}'::bigint[], 13::bigint, 14.5::float8,
            '{21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38}'::bigint[], 33::bigint, 34.5::float8,
            '2001-02-03 04:05:06+00'::timestamptz, '2001-02-03 04:05:00+00'::timestamptz)
$$, 'every counter, histogram and timestamp is published from its own column');

SELECT results_eq($$
    SELECT m.cycle_duration_bounds, m.reap_lag_bounds
      FROM messenger.call_reaper_metrics() AS m
$$, $$
    SELECT k.cycle_duration_bounds, k.reap_lag_bounds FROM messenger.call_reaper_counters AS k
$$, 'histogram bounds are published beside their buckets');

-- The ledger and the function read in one statement, so one snapshot: the difference is exact.
INSERT INTO messenger.call_reaper_runs
       (run_id, started_at, finished_at, as_of, result, lock_acquired, batch_size, ring_timeout,
        stale_timeout, duration_ms)
SELECT gen_random_uuid(), now(), now(), now(), 'skipped', false, 200, '45 s', '2 h', 0
  FROM generate_series(1, 2);
SELECT is((SELECT m.runs_skipped - (SELECT count(*) FROM messenger.call_reaper_runs AS r
                                     WHERE r.result = 'skipped')
             FROM messenger.call_reaper_metrics() AS m), 103::bigint,
    'skipped runs = runs_skipped_purged + skipped rows in the ledger');

SELECT * FROM finish();
ROLLBACK;
