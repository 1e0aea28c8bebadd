-- Revert call_timeout_reaper:tables/call_reaper_cron_jobs from pg
-- The cron/ changes that write its rows come later in the plan: their reverts have run.

BEGIN;

DROP TABLE IF EXISTS messenger.call_reaper_cron_jobs;

COMMIT;
