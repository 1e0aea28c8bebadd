-- Revert call_timeout_reaper:cron/call_reaper_purge from pg
-- Back to the released state: where the job is kept in this database the released job is the
-- same one and stays (the released revert unschedules it). Where it is kept in another database
-- (cron_database), THIS database's job is unscheduled there, by its recorded name and database.

\set job_kind purge
\set as_job_role false
\ir include/unschedule_job.psql

BEGIN;
DELETE FROM messenger.call_reaper_cron_jobs WHERE kind = 'purge';
COMMIT;
