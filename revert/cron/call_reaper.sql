-- Revert call_timeout_reaper:cron/call_reaper from pg
-- Back to the released state. Where the job is kept in this database the released job is the
-- same one: it stays, for the released revert (run next on a full revert) to unschedule. Where it
-- is kept in another database (cron_database: the released scripts could not put it there), the
-- job of THIS database is unscheduled there, by its recorded name, database and the job role
-- (never another database's), as the job role itself inside one transaction (pg_cron lets only
-- a superuser or the job's owner unschedule it), and the role's statement_timeout here is reset.

BEGIN;
SELECT coalesce(bool_or(r.cron_database <> pg_catalog.current_database()), false) AS cross_db,
       coalesce(max(r.cron_database), '') AS cron_database, coalesce(max(r.jobname), '') AS jobname,
       pg_catalog.current_database() AS product_database
  FROM messenger.call_reaper_cron_jobs AS r WHERE r.kind = 'reaper' \gset
COMMIT;

\if :cross_db
\connect :"cron_database"
BEGIN;
SELECT pg_catalog.set_config('call_reaper.product_database', :'product_database', true) AS product_database_set,
       pg_catalog.set_config('call_reaper.jobname', :'jobname', true) AS jobname_set \gset
DO $$
DECLARE
    v_product  text := current_setting('call_reaper.product_database');
    v_name     text := current_setting('call_reaper.jobname');
    v_deployer name := current_user;
BEGIN
    IF pg_catalog.to_regclass('cron.job') IS NULL THEN
        RETURN;
    END IF;
    -- cron.unschedule is PUBLIC's; only the schema needs the passing grant.
    GRANT USAGE ON SCHEMA cron TO messenger_call_reaper;
    SET LOCAL ROLE messenger_call_reaper;
    -- PERFORM, not SELECT: sqitch revert would print the result.
    PERFORM cron.unschedule(j.jobid)
      FROM cron.job AS j
     WHERE j.jobname = v_name AND j.database = v_product AND j.username = current_user;
    EXECUTE format('SET LOCAL ROLE %I', v_deployer);
    REVOKE USAGE ON SCHEMA cron FROM messenger_call_reaper;
END
$$;
COMMIT;
\connect :"product_database"
\endif

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
