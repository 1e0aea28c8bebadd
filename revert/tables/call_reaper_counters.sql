-- Revert call_timeout_reaper:tables/call_reaper_counters from pg
-- Back to the released bounds (tables/call_reaper_counters@v2.0.0), each with its count: they are
-- all among the current ones, so nothing is lost but the sub-second detail.

BEGIN;

UPDATE messenger.call_reaper_counters AS k
   SET reap_lag_buckets = ARRAY(
           SELECT coalesce((SELECT o.n FROM unnest(k.reap_lag_bounds, k.reap_lag_buckets) AS o (le, n)
                             WHERE o.le = b.le), 0)
             FROM unnest('{1,2.5,5,10,15,20,30,60,120,300,900,3600}'::double precision[]) WITH ORDINALITY AS b (le, i)
            ORDER BY b.i),
       reap_lag_bounds = '{1,2.5,5,10,15,20,30,60,120,300,900,3600}'
 WHERE k.singleton;

ALTER TABLE messenger.call_reaper_counters
    ALTER COLUMN reap_lag_bounds SET DEFAULT '{1,2.5,5,10,15,20,30,60,120,300,900,3600}',
    ALTER COLUMN reap_lag_buckets SET DEFAULT array_fill(0::bigint, ARRAY[12]);

COMMIT;
