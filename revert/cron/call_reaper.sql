-- Revert call_timeout_reaper:cron/call_reaper from pg
-- Back to the released state. Where the job is kept in this database the released job is the
-- same one: it stays, for the released revert (run next on a full revert) to unschedule. Where it
-- is kept in another database (cron_database: the released scripts could not put it there), the
-- job of THIS database is unscheduled there, by its recorded name, database and the job role
-- (never another database's), as the job role itself inside one transaction (pg_cron lets only
-- a superuser or the job's owner unschedule it), and the role's statement_timeout here is reset.

\set job_kind reaper
\set as_job_role true
\ir include/unschedule_job.psql

BEGIN;
\if :cross_db
DO $$
BEGIN
    EXECUTE format('ALTER ROLE messenger_call_reaper IN DATABASE %I RESET statement_timeout', pg_catalog.current_database());
END
$$;
\endif
DELETE FROM messenger.call_reaper_cron_jobs WHERE kind = 'reaper';
COMMIT;
