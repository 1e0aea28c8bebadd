-- Revert call_timeout_reaper:functions/_call_reaper_quarantine_released from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger._call_reaper_quarantine_released();

COMMIT;
