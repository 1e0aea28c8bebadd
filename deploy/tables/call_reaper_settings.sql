-- Deploy call_timeout_reaper:tables/call_reaper_settings to pg
-- The options row gains wake_at_deadline (2.1.0): whether the scheduled job, between its polling
-- ticks, wakes at the next Ringing call's deadline (messenger.run_call_reaper_ticks). The
-- released table is tables/call_reaper_settings@v2.0.0; a new column with a constant default
-- is a catalog change only (no rewrite of the one row, no lock held past the statement).

BEGIN;

ALTER TABLE messenger.call_reaper_settings ADD COLUMN wake_at_deadline boolean NOT NULL DEFAULT true;
COMMENT ON COLUMN messenger.call_reaper_settings.wake_at_deadline IS
    'True: between polling ticks the scheduled job wakes at the next Ringing call''s deadline and closes it then (a slot held between ticks on pg_cron 1.5+); false: calls close at the polling ticks only.';

COMMIT;
