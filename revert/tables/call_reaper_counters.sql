-- Revert call_timeout_reaper:tables/call_reaper_counters from pg
-- The v1.0.0 reaper counts every run in this row: the idle runs not folded yet go in first.

BEGIN;

UPDATE messenger.call_reaper_counters AS k
   SET runs_completed = k.runs_completed + p.runs,
       cycle_duration_buckets = ARRAY(
           SELECT b.n + (SELECT count(*) FROM unnest(p.seconds) AS s (v) WHERE s.v <= b.le)
             FROM unnest(k.cycle_duration_buckets, k.cycle_duration_bounds) WITH ORDINALITY AS b (n, le, i)
            ORDER BY b.i),
       cycle_duration_count = k.cycle_duration_count + p.runs,
       cycle_duration_sum = k.cycle_duration_sum + coalesce((SELECT sum(s.v) FROM unnest(p.seconds) AS s (v)), 0)
  FROM (SELECT count(*) AS runs, coalesce(array_agg(r.duration_ms::double precision / 1000), '{}') AS seconds
          FROM messenger.call_reaper_runs AS r, messenger.call_reaper_counters AS c
         WHERE r.started_at > c.idle_folded_through AND r.lock_acquired AND r.result = 'completed') AS p
 WHERE k.singleton;
ALTER TABLE messenger.call_reaper_counters DROP COLUMN idle_folded_through;

COMMIT;
