-- Deploy call_timeout_reaper:triggers/call_reaper_quarantine_released to pg
-- Attaches messenger._call_reaper_quarantine_released() to messenger.call_reaper_quarantine:
-- a row trigger for DELETE (a DBA releasing a call, the reaper's clean-up) and a statement
-- trigger for TRUNCATE, which has no row level.

BEGIN;

CREATE TRIGGER call_reaper_quarantine_released
    AFTER DELETE ON messenger.call_reaper_quarantine
    FOR EACH ROW EXECUTE FUNCTION messenger._call_reaper_quarantine_released();
CREATE TRIGGER call_reaper_quarantine_truncated
    AFTER TRUNCATE ON messenger.call_reaper_quarantine
    FOR EACH STATEMENT EXECUTE FUNCTION messenger._call_reaper_quarantine_released();

COMMIT;
