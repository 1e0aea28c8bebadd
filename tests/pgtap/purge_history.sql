-- Retention: history older than as_of - retention is purged from the run ledger, in batches,
-- and the skipped-run total stays monotonic (purged skipped rows are folded into
-- runs_skipped_purged). Times are in 2000, long before any real run, so live history is never
-- in the way. The reaper's pg_cron run details and the hourly purge job are in
-- purge_history_cron.sql (needs pg_cron); this file runs on every version.
BEGIN;
SELECT plan(7);
-- Who may run it: tests/pgtap/privileges.sql, which holds every grant (not repeated here).


-- retention 7 days, as_of 2000-01-08 -> cutoff 2000-01-01 00:00.
INSERT INTO messenger.call_reaper_runs
       (run_id, started_at, finished_at, as_of, result, lock_acquired, batch_size, ring_timeout, stale_timeout, duration_ms)
SELECT gen_random_uuid(), t, t, t, r, r <> 'skipped', 200, '45 seconds', '2 hours', 1
  FROM (VALUES ('1999-12-30 00:00+00'::timestamptz, 'completed'), ('1999-12-30 00:00:15+00', 'skipped'),
               ('1999-12-31 00:00+00', 'skipped'), ('1999-12-31 23:59:59+00', 'failed'),
               ('2000-01-01 00:00+00', 'skipped'), ('2000-01-05 00:00+00', 'completed')) AS v (t, r);
CREATE TEMP TABLE skipped_before AS
SELECT k.runs_skipped_purged + (SELECT count(*) FROM messenger.call_reaper_runs WHERE result = 'skipped') AS total
  FROM messenger.call_reaper_counters AS k;

CREATE TEMP TABLE p1 AS SELECT * FROM messenger.purge_call_reaper_history(as_of => '2000-01-08 00:00+00', batch_size => 3);
SELECT results_eq('SELECT cutoff, runs_purged, skipped_runs_folded, job_run_details_purged FROM p1',
    $$VALUES ('2000-01-01 00:00+00'::timestamptz, 3::bigint, 2::bigint, 0::bigint)$$,
    'the first batch purges the 3 oldest ledger rows (2 skipped) and no run detail (none is that old)');
SELECT is((SELECT k.runs_skipped_purged + (SELECT count(*) FROM messenger.call_reaper_runs WHERE result = 'skipped')
             FROM messenger.call_reaper_counters AS k),
          (SELECT total FROM skipped_before),
          'the total of skipped runs is unchanged by purging');

CREATE TEMP TABLE p2 AS SELECT * FROM messenger.purge_call_reaper_history(as_of => '2000-01-08 00:00+00', batch_size => 3);
SELECT results_eq('SELECT runs_purged, skipped_runs_folded, job_run_details_purged FROM p2',
    $$VALUES (1::bigint, 0::bigint, 0::bigint)$$,
    'the next batch purges the last old ledger row');
SELECT is((SELECT count(*)::integer FROM messenger.call_reaper_runs WHERE started_at < '2000-01-01 00:00+00'),
          0, 'no ledger row older than the retention remains');
SELECT is((SELECT count(*)::integer FROM messenger.call_reaper_runs
            WHERE started_at IN ('2000-01-01 00:00+00', '2000-01-05 00:00+00')),
          2, 'ledger rows at or after the cutoff are kept');
SELECT results_eq($$SELECT runs_purged, job_run_details_purged FROM messenger.purge_call_reaper_history(as_of => '2000-01-08 00:00+00')$$,
    $$VALUES (0::bigint, 0::bigint)$$,
    'purging again finds nothing: it is idempotent');
SELECT throws_ok($$SELECT * FROM messenger.purge_call_reaper_history(as_of => 'infinity')$$, '22023', NULL,
    'an infinite as_of is refused with 22023');

SELECT * FROM finish();
ROLLBACK;
