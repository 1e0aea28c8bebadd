-- Verify call_timeout_reaper:cron/call_reaper_warden on pg

SELECT :'scheduler' = 'none' AND :'cron_database' = 'none' AS no_scheduler \gset
\if :no_scheduler
\else
BEGIN;
-- No row (nothing recorded) fails \gset, and the verify with it.
SELECT r.jobname, r.cron_database, r.schedule, pg_catalog.current_database() AS product_database,
       r.cron_database <> pg_catalog.current_database() AS cross_db
  FROM messenger.call_reaper_cron_jobs AS r WHERE r.kind = 'warden' \gset
ROLLBACK;

\if :cross_db
\connect :"cron_database"
\endif
BEGIN;
SELECT pg_catalog.set_config('call_reaper.product_database', :'product_database', true) AS product_database_set,
       pg_catalog.set_config('call_reaper.jobname', :'jobname', true) AS jobname_set,
       pg_catalog.set_config('call_reaper.schedule', :'schedule', true) AS schedule_set \gset
DO $$
DECLARE
    j cron.job;
BEGIN
    SELECT * INTO STRICT j FROM cron.job
     WHERE jobname = current_setting('call_reaper.jobname')
       AND database = current_setting('call_reaper.product_database');
    IF j.command <> 'CALL messenger.run_call_reaper_warden()'
       OR j.schedule NOT IN ('1 seconds', '* * * * *') THEN
        RAISE EXCEPTION 'the warden job must CALL messenger.run_call_reaper_warden() every second or minute, not on %', j.schedule;
    END IF;
    IF j.schedule <> current_setting('call_reaper.schedule') THEN
        RAISE EXCEPTION 'the % job runs on %, recorded %', j.jobname, j.schedule, current_setting('call_reaper.schedule');
    END IF;
END
$$;
ROLLBACK;
\endif
