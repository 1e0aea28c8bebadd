-- Poison calls the reaper could not close, with their last error and when they are retried.
-- The call stays active; see docs/runbooks/call-timeout-reaper.md ("Poison call").
--   psql -X -d messenger -f sql/quarantined_calls.sql
SELECT q.call_id, q.phase, c.status, q.attempts, q.first_failed_at, q.last_failed_at,
       q.next_attempt_at, q.last_sqlstate, q.last_message, q.last_run_id
  FROM messenger.call_reaper_quarantine AS q
  LEFT JOIN messenger.call_sessions AS c ON c.call_id = q.call_id
 ORDER BY q.first_failed_at, q.call_id;
