-- Revert call_timeout_reaper:cron/call_reaper_warden from pg
-- Back to the released state: where the job is kept in this database, the released schedule
-- (the v1.2.0 script's, by pg_cron version) is the one this change set too, so it stays. Where it
-- is kept in another database (cron_database), THIS database's job is unscheduled there, by its
-- recorded name and database.

\set job_kind warden
\set as_job_role false
\ir include/unschedule_job.psql

BEGIN;
DELETE FROM messenger.call_reaper_cron_jobs WHERE kind = 'warden';
COMMIT;
