-- Verify call_timeout_reaper:tables/call_reaper_counters on pg
-- The row, with reap_lag's buckets from 10 ms beside their counts.

BEGIN;

SELECT 1 / count(*)
  FROM messenger.call_reaper_counters
 WHERE cardinality(cycle_duration_buckets) = cardinality(cycle_duration_bounds)
   AND cardinality(reap_lag_buckets) = cardinality(reap_lag_bounds)
   AND reap_lag_bounds[1] = 0.01
   AND idle_folded_through IS NOT NULL;

ROLLBACK;
