-- Deploy call_timeout_reaper:cron/call_reaper_warden to pg
-- Schedules the pg_cron job messenger-call-reaper-warden, CALLing
-- messenger.run_call_reaper_warden() in this database, by the pg_cron version (as cron/call_reaper),
-- and records it in messenger.call_reaper_cron_jobs (the procedure reads its schedule there):
--   * 1.5+: '1 seconds', one check per run: a job slot for milliseconds a second (providers cap
--     concurrent jobs: cron.max_running_jobs is 5 on RDS).
--   * 1.4: '* * * * *' (nothing shorter exists), the procedure checks once a second for the
--     minute; the deploying role's statement_timeout, if any, must allow a one-minute CALL.
-- It belongs to the deploying role: ending a superuser's backend that holds the reaper's lock
-- takes a superuser, and the reaper's job role must hold no such right. Kept where
-- cron/call_reaper kept the reaper's job, under the same name rule (docs/design.md, "Scheduling").
-- After ALTER EXTENSION pg_cron UPDATE from 1.4 the job stays on the minute (and the procedure
-- keeps its loop) until rescheduled: docs/managed-postgresql.md, "pg_cron versions".

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
    v_spec     constant text := 'messenger-call-reaper-warden';
    v_version  integer[];
    v_schedule text;
    v_name     text;
BEGIN
    SELECT string_to_array(split_part(e.extversion, '-', 1), '.')::integer[] INTO STRICT v_version
      FROM pg_catalog.pg_extension AS e WHERE e.extname = 'pg_cron';
    v_schedule := CASE WHEN v_version >= ARRAY[1, 5] THEN '1 seconds' ELSE '* * * * *' END;
    IF v_product = pg_catalog.current_database() THEN
        -- By name, in place: an upgrade keeps the job id.
        PERFORM cron.schedule(v_spec, v_schedule, 'CALL messenger.run_call_reaper_warden()');
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
        PERFORM cron.schedule_in_database(v_name, v_schedule, 'CALL messenger.run_call_reaper_warden()', v_product);
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
SELECT 'warden', :'jobname', r.cron_database, :'schedule', :'cron_version'
  FROM messenger.call_reaper_cron_jobs AS r WHERE r.kind = 'reaper'
ON CONFLICT (kind) DO UPDATE
   SET jobname = EXCLUDED.jobname, cron_database = EXCLUDED.cron_database,
       schedule = EXCLUDED.schedule, cron_version = EXCLUDED.cron_version;
COMMIT;
\endif
