-- Deploy call_timeout_reaper:tables/call_reaper_counters to pg
-- reap_lag's buckets start at 10 ms (2.1): with the deadline wake (run_call_reaper_ticks) a
-- Missed call closes within milliseconds of its deadline, which a first bucket of 1 s could not
-- show. The released table is tables/call_reaper_counters@v2.0.0. The bounds are data of the one
-- row, beside their cumulative ("le") counts: each old bound keeps its count; the new sub-second
-- bounds start at zero (what fell under them before is not known, and Prometheus reads a new
-- series from its first scrape, so a rate over them is right from the upgrade on).

BEGIN;

ALTER TABLE messenger.call_reaper_counters
    ALTER COLUMN reap_lag_bounds SET DEFAULT '{0.01,0.025,0.05,0.1,0.25,0.5,1,2.5,5,10,15,20,30,60,120,300,900,3600}',
    ALTER COLUMN reap_lag_buckets SET DEFAULT array_fill(0::bigint, ARRAY[18]);

UPDATE messenger.call_reaper_counters AS k
   SET reap_lag_buckets = ARRAY(
           SELECT coalesce((SELECT o.n FROM unnest(k.reap_lag_bounds, k.reap_lag_buckets) AS o (le, n)
                             WHERE o.le = b.le), 0)
             FROM unnest('{0.01,0.025,0.05,0.1,0.25,0.5,1,2.5,5,10,15,20,30,60,120,300,900,3600}'::double precision[])
                  WITH ORDINALITY AS b (le, i)
            ORDER BY b.i),
       reap_lag_bounds = '{0.01,0.025,0.05,0.1,0.25,0.5,1,2.5,5,10,15,20,30,60,120,300,900,3600}'
 WHERE k.singleton;

COMMIT;
