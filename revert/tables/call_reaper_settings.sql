-- Revert call_timeout_reaper:tables/call_reaper_settings from pg
-- Back to the released table (tables/call_reaper_settings@v2.0.0): the column and its grants go.

BEGIN;

ALTER TABLE messenger.call_reaper_settings DROP COLUMN IF EXISTS wake_at_deadline;

COMMIT;
