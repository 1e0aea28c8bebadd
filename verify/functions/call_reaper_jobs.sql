-- Verify call_timeout_reaper:functions/call_reaper_jobs on pg

BEGIN;

SELECT 'messenger.call_reaper_jobs()'::regprocedure;

ROLLBACK;
