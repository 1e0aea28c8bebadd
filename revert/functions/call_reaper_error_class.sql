-- Revert call_timeout_reaper:functions/call_reaper_error_class from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger.call_reaper_error_class(text);

COMMIT;
