-- Revert call_timeout_reaper:functions/call_reaper_next_deadline from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger.call_reaper_next_deadline(timestamptz);

COMMIT;
