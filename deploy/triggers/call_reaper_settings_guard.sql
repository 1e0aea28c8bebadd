-- Deploy call_timeout_reaper:triggers/call_reaper_settings_guard to pg
-- Attaches messenger._call_reaper_settings_guard() to messenger.call_reaper_settings. One rule,
-- two triggers only because TRUNCATE has no row-level trigger: the row trigger checks every
-- INSERT/UPDATE and refuses DELETE, the statement trigger refuses TRUNCATE.

BEGIN;

CREATE TRIGGER call_reaper_settings_guard
    BEFORE INSERT OR UPDATE OR DELETE ON messenger.call_reaper_settings
    FOR EACH ROW EXECUTE FUNCTION messenger._call_reaper_settings_guard();
CREATE TRIGGER call_reaper_settings_no_truncate
    BEFORE TRUNCATE ON messenger.call_reaper_settings
    FOR EACH STATEMENT EXECUTE FUNCTION messenger._call_reaper_settings_guard();

-- The stored row predates the trigger: check it now rather than at the job's first run.
UPDATE messenger.call_reaper_settings SET singleton = singleton;

COMMIT;
