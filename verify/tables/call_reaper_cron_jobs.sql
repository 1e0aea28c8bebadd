-- Verify call_timeout_reaper:tables/call_reaper_cron_jobs on pg

BEGIN;

SELECT kind, jobname, cron_database, schedule, cron_version FROM messenger.call_reaper_cron_jobs WHERE false;

ROLLBACK;
