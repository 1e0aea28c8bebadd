-- Revert call_timeout_reaper:triggers/call_reaper_quarantine_released from pg

BEGIN;

DROP TRIGGER IF EXISTS call_reaper_quarantine_truncated ON messenger.call_reaper_quarantine;
DROP TRIGGER IF EXISTS call_reaper_quarantine_released ON messenger.call_reaper_quarantine;

COMMIT;
