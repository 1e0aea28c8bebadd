-- Revert call_timeout_reaper:cron/call_reaper_purge from pg
-- Unschedules THIS database's job where it is kept (here, or in cron_database), by its recorded
-- name and database (never another database's), and forgets it.

\set job_kind purge
\set as_job_role false
\ir include/unschedule_job.psql

BEGIN;
DELETE FROM messenger.call_reaper_cron_jobs WHERE kind = 'purge';
COMMIT;
