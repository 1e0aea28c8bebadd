-- Revert call_timeout_reaper:functions/_call_reaper_settings_guard from pg
-- Back to the v1.0.0 trigger function. Its deploy script says CREATE FUNCTION, not OR REPLACE,
-- and the triggers follow the function they were made with (by oid), so: the reworked function
-- steps aside under another name (its triggers keep guarding the row), the released one is
-- created, then both triggers are pointed at it (CREATE OR REPLACE TRIGGER, as
-- triggers/call_reaper_settings_guard makes them) and the reworked one is dropped. A guard is
-- attached to the settings row at every commit in between.

BEGIN;

ALTER FUNCTION messenger._call_reaper_settings_guard() RENAME TO _call_reaper_settings_guard_reverting;

COMMIT;

\ir ../../deploy/functions/_call_reaper_settings_guard@v1.0.0.sql

BEGIN;

CREATE OR REPLACE TRIGGER call_reaper_settings_guard
    BEFORE INSERT OR UPDATE OR DELETE ON messenger.call_reaper_settings
    FOR EACH ROW EXECUTE FUNCTION messenger._call_reaper_settings_guard();
CREATE OR REPLACE TRIGGER call_reaper_settings_no_truncate
    BEFORE TRUNCATE ON messenger.call_reaper_settings
    FOR EACH STATEMENT EXECUTE FUNCTION messenger._call_reaper_settings_guard();
DROP FUNCTION messenger._call_reaper_settings_guard_reverting();

COMMIT;
