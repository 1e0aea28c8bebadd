-- Revert call_timeout_reaper:functions/call_reaper_job_name from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger.call_reaper_job_name(text);

COMMIT;
