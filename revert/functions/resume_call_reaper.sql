-- Revert call_timeout_reaper:functions/resume_call_reaper from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger.resume_call_reaper();

COMMIT;
