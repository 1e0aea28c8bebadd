-- Revert call_timeout_reaper:tables/call_reaper_claim_floor from pg

BEGIN;

DROP TRIGGER IF EXISTS call_reaper_quarantine_truncated ON messenger.call_reaper_quarantine;
DROP TRIGGER IF EXISTS call_reaper_quarantine_released ON messenger.call_reaper_quarantine;
DROP FUNCTION IF EXISTS messenger._call_reaper_quarantine_released();
DROP TABLE IF EXISTS messenger.call_reaper_claim_floor;

COMMIT;
