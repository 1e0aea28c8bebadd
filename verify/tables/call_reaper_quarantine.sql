-- Verify call_timeout_reaper:tables/call_reaper_quarantine on pg

BEGIN;

SELECT call_id, phase, attempts, first_failed_at, last_failed_at, next_attempt_at,
       last_sqlstate, last_message, last_run_id
  FROM messenger.call_reaper_quarantine
 WHERE false;

SELECT 'messenger.ix_call_reaper_quarantine_due'::regclass;

ROLLBACK;
