-- Verify call_timeout_reaper:tables/call_reaper_counters on pg

BEGIN;

SELECT 1 / count(*)
  FROM messenger.call_reaper_counters
 WHERE cardinality(cycle_duration_buckets) = cardinality(cycle_duration_bounds)
   AND idle_folded_through IS NOT NULL;

ROLLBACK;
