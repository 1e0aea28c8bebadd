-- Deploy call_timeout_reaper:cron/call_reaper_purge to pg
-- Schedules the pg_cron job messenger-call-reaper-purge: at minute 17 of every hour it runs
-- messenger.purge_call_reaper_history() in this database, and records it in
-- messenger.call_reaper_cron_jobs. It belongs to the deploying role, not to
-- messenger_call_reaper: deleting history with a chosen cutoff, and other roles' run details,
-- are rights the job role must not hold. Kept where cron/call_reaper kept the reaper's job (its
-- row in call_reaper_cron_jobs): here with cron.schedule, or in cron_database with
-- cron.schedule_in_database, which the deployer may run (cron/call_reaper checked it), under the
-- name rule of cron/call_reaper (docs/design.md, "Scheduling"). Purging from another database
-- reaches the run ledger only: cron.job_run_details is in the cron database.

SELECT :'scheduler' = 'none' AND :'cron_database' = 'none' AS no_scheduler \gset
\if :no_scheduler
\else
BEGIN;
SELECT pg_catalog.current_database() AS product_database, r.cron_database,
       r.cron_database <> pg_catalog.current_database() AS cross_db
  FROM messenger.call_reaper_cron_jobs AS r WHERE r.kind = 'reaper' \gset
COMMIT;

\if :cross_db
\connect :"cron_database"
\endif
BEGIN;
SELECT pg_catalog.set_config('call_reaper.product_database', :'product_database', true) AS product_database_set \gset
-- PERFORM, not SELECT: sqitch deploy would print the job id.
DO $$
DECLARE
    v_product  text := current_setting('call_reaper.product_database');
    v_spec     constant text := 'messenger-call-reaper-purge';
    v_version  integer[];
    v_schedule text;
    v_name     text;
BEGIN
    SELECT string_to_array(split_part(e.extversion, '-', 1), '.')::integer[] INTO STRICT v_version
      FROM pg_catalog.pg_extension AS e WHERE e.extname = 'pg_cron';
    v_schedule := '17 * * * *';
    IF v_product = pg_catalog.current_database() THEN
        -- By name, in place: an upgrade keeps the job id.
        PERFORM cron.schedule(v_spec, v_schedule, 'SELECT * FROM messenger.purge_call_reaper_history()');
        v_name := v_spec;
    ELSE
        -- The deployer's job: its own jobs in every database are visible to it (RLS) or, to a
        -- superuser, all of them, hence the username.
        SELECT j.jobname INTO v_name FROM cron.job AS j
         WHERE j.username = current_user AND j.database = v_product
           AND j.jobname IN (v_spec, v_spec || '-' || v_product);
        IF v_name IS NULL THEN
            v_name := CASE WHEN EXISTS (SELECT FROM cron.job AS j WHERE j.jobname = v_spec AND j.username = current_user)
                           THEN v_spec || '-' || v_product ELSE v_spec END;
        END IF;
        PERFORM cron.schedule_in_database(v_name, v_schedule, 'SELECT * FROM messenger.purge_call_reaper_history()', v_product);
    END IF;
    PERFORM pg_catalog.set_config('call_reaper.jobname', v_name, true),
            pg_catalog.set_config('call_reaper.schedule', v_schedule, true),
            pg_catalog.set_config('call_reaper.cron_version', array_to_string(v_version, '.'), true);
END
$$;
SELECT current_setting('call_reaper.jobname') AS jobname, current_setting('call_reaper.schedule') AS schedule,
       current_setting('call_reaper.cron_version') AS cron_version \gset
COMMIT;

\if :cross_db
\connect :"product_database"
\endif
BEGIN;
INSERT INTO messenger.call_reaper_cron_jobs AS r (kind, jobname, cron_database, schedule, cron_version)
SELECT 'purge', :'jobname', r.cron_database, :'schedule', :'cron_version'
  FROM messenger.call_reaper_cron_jobs AS r WHERE r.kind = 'reaper'
ON CONFLICT (kind) DO UPDATE
   SET jobname = EXCLUDED.jobname, cron_database = EXCLUDED.cron_database,
       schedule = EXCLUDED.schedule, cron_version = EXCLUDED.cron_version;
COMMIT;
\endif
