-- Every cycle is recorded: run_id = the correlation_id of its outbox rows, the ledger row
-- matches the returned counts, and the cumulative counters move by exactly those counts.
BEGIN;
SELECT plan(8);
\ir fixtures/idle_runs_folded.sql

CREATE TEMP TABLE counters_before AS SELECT * FROM messenger.call_reaper_counters;
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
VALUES (gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing',
        '2100-01-01 00:00+00', NULL, '2100-01-01 00:00+00'),
       (gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing',
        '2100-01-01 00:00:01+00', NULL, '2100-01-01 00:00:01+00'),
       (gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Video', 'Answered',
        '2100-01-01 00:00+00', '2100-01-01 00:00:02+00', '2100-01-01 00:00:02+00');

CREATE TEMP TABLE r AS SELECT * FROM messenger.reap_call_timeouts(as_of => '2100-01-01 03:00+00');

SELECT is(ARRAY(SELECT DISTINCT correlation_id FROM messenger.realtime_outbox
                 WHERE created_at = '2100-01-01 03:00+00'),
          ARRAY[(SELECT run_id FROM r)],
          'the run id is the correlation id of every outbox row the cycle wrote');
SELECT results_eq(
    $$SELECT result, lock_acquired, as_of, missed_count, failed_count, skipped_locked_count, poisoned_count, duration_ms
        FROM messenger.call_reaper_runs WHERE run_id = (SELECT run_id FROM r)$$,
    $$SELECT result, lock_acquired, as_of, missed_count, failed_count, skipped_locked_count, poisoned_count, duration_ms
        FROM r$$,
    'the run ledger records the cycle as returned');
SELECT is((SELECT k.runs_completed - b.runs_completed FROM messenger.call_reaper_counters k, counters_before b),
          1::bigint, 'a completed cycle adds one completed run');
SELECT is((SELECT ARRAY[k.items_missed - b.items_missed, k.items_failed - b.items_failed]
             FROM messenger.call_reaper_counters k, counters_before b),
          ARRAY[2, 1]::bigint[], 'the item counters move by the calls closed');
SELECT is((SELECT k.cycle_duration_count - b.cycle_duration_count FROM messenger.call_reaper_counters k, counters_before b),
          1::bigint, 'the cycle is observed once in the duration histogram');
SELECT is((SELECT k.reap_lag_count - b.reap_lag_count FROM messenger.call_reaper_counters k, counters_before b),
          3::bigint, 'each closed call is observed once in the reap-lag histogram');
-- Lags: the missed calls were due at 00:00:45 and 00:00:46 (10755 s and 10754 s late), the
-- stale one at 02:00:02 (3598 s late): only the last bound (3600 s) holds one of them.
SELECT is((SELECT ARRAY(SELECT n - o FROM unnest(k.reap_lag_buckets, b.reap_lag_buckets) AS u (n, o))
             FROM messenger.call_reaper_counters k, counters_before b),
          ARRAY[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]::bigint[],
          'each closed call lands in the cumulative reap-lag buckets its lateness reaches');
SELECT is((SELECT k.reap_lag_sum - b.reap_lag_sum FROM messenger.call_reaper_counters k, counters_before b),
          (10755 + 10754 + 3598)::double precision,
          'the reap-lag sum adds how late each call was closed');

SELECT * FROM finish();
ROLLBACK;
