-- Revert call_timeout_reaper:cron/call_reaper_purge from pg
-- Back to the released state: where the job is kept in this database the released job is the
-- same one and stays (the released revert unschedules it). Where it is kept in another database
-- (cron_database), THIS database's job is unscheduled there, by its recorded name and database.

BEGIN;
SELECT coalesce(bool_or(r.cron_database <> pg_catalog.current_database()), false) AS cross_db,
       coalesce(max(r.cron_database), '') AS cron_database, coalesce(max(r.jobname), '') AS jobname,
       pg_catalog.current_database() AS product_database
  FROM messenger.call_reaper_cron_jobs AS r WHERE r.kind = 'purge' \gset
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
BEGIN
    IF pg_catalog.to_regclass('cron.job') IS NULL THEN
        RETURN;
    END IF;
    -- By job id, name and database, whoever scheduled it: the reverting role may differ from the
    -- deployer (a superuser sees every job, another role its own).
    PERFORM cron.unschedule(j.jobid)
      FROM cron.job AS j
     WHERE j.jobname = v_name AND j.database = v_product;
END
$$;
COMMIT;
\connect :"product_database"
\endif

BEGIN;
DELETE FROM messenger.call_reaper_cron_jobs WHERE kind = 'purge';
COMMIT;
