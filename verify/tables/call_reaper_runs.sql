-- Verify call_timeout_reaper:tables/call_reaper_runs on pg

BEGIN;

SELECT run_id, started_at, finished_at, as_of, result, lock_acquired, batch_size, ring_timeout,
       stale_timeout, missed_count, failed_count, skipped_locked_count, poisoned_count,
       duration_ms, subtransactions, deferred_count, error_sqlstate, error_message
  FROM messenger.call_reaper_runs
 WHERE false;

ROLLBACK;
