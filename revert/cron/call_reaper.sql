-- Revert call_timeout_reaper:cron/call_reaper from pg
-- Unschedules THIS database's job where it is kept (here, or in cron_database), by its recorded
-- name, database and the job role (never another database's), as the job role itself inside one
-- transaction (pg_cron lets only a superuser or the job's owner unschedule it), and resets the
-- role's statement_timeout in this database, which the deploy set.

\set job_kind reaper
\set as_job_role true
\ir include/unschedule_job.psql

BEGIN;
\if :had_job
DO $$
BEGIN
    EXECUTE format('ALTER ROLE messenger_call_reaper IN DATABASE %I RESET statement_timeout', pg_catalog.current_database());
END
$$;
\endif
DELETE FROM messenger.call_reaper_cron_jobs WHERE kind = 'reaper';
COMMIT;
