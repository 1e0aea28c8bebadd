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
-- keeps its loop) until rescheduled: docs/managed-postgresql.md, "pg_cron versions". An extversion
-- below the installed library's version is scheduled by extversion with a WARNING (as cron/call_reaper).

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
    v_extver   text;
    v_version  integer[];
    v_schedule text;
    v_name     text;
BEGIN
    SELECT e.extversion INTO STRICT v_extver FROM pg_catalog.pg_extension AS e WHERE e.extname = 'pg_cron';
    v_version := string_to_array(split_part(v_extver, '-', 1), '.')::integer[];
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
            pg_catalog.set_config('call_reaper.cron_version', array_to_string(v_version, '.'), true),
            pg_catalog.set_config('call_reaper.extversion', v_extver, true);
END
$$;
SELECT current_setting('call_reaper.jobname') AS jobname, current_setting('call_reaper.schedule') AS schedule,
       current_setting('call_reaper.cron_version') AS cron_version,
       current_setting('call_reaper.extversion') AS extversion \gset
COMMIT;

\if :cross_db
\connect :"product_database"
\endif
BEGIN;
-- As cron/call_reaper: extversion lagging the library is warned of, not silently followed.
SELECT pg_catalog.set_config('call_reaper.cron_db', :'cron_database', true) AS cron_db_set,
       pg_catalog.set_config('call_reaper.extversion', :'extversion', true) AS extversion_set,
       pg_catalog.set_config('call_reaper.jobname', :'jobname', true) AS jobname_set,
       pg_catalog.set_config('call_reaper.schedule', :'schedule', true) AS schedule_set \gset
DO $$
DECLARE
    v_extver  text := current_setting('call_reaper.extversion');
    v_library text;
BEGIN
    SELECT a.default_version INTO v_library FROM pg_catalog.pg_available_extensions AS a WHERE a.name = 'pg_cron';
    -- Whole versions ('1.4-1' is 1.4.1): an update from 1.4 to 1.4-1 is pending too.
    IF string_to_array(translate(v_library, '-', '.'), '.')::integer[]
       > string_to_array(translate(v_extver, '-', '.'), '.')::integer[] THEN
        RAISE WARNING 'pg_cron''s extension version % is older than its installed package %', v_extver, v_library
            USING DETAIL = pg_catalog.format('The job %s was scheduled ''%s'' for pg_cron %s, by pg_extension.extversion.',
                                             current_setting('call_reaper.jobname'), current_setting('call_reaper.schedule'), v_extver),
                  HINT = pg_catalog.format('In database %I, as pg_cron''s owner: ALTER EXTENSION pg_cron UPDATE; then deploy the cron changes again (docs/managed-postgresql.md, "pg_cron versions and the extension version").',
                                           current_setting('call_reaper.cron_db'));
    END IF;
END
$$;
INSERT INTO messenger.call_reaper_cron_jobs AS r (kind, jobname, cron_database, schedule, cron_version)
SELECT 'warden', :'jobname', r.cron_database, :'schedule', :'cron_version'
  FROM messenger.call_reaper_cron_jobs AS r WHERE r.kind = 'reaper'
ON CONFLICT (kind) DO UPDATE
   SET jobname = EXCLUDED.jobname, cron_database = EXCLUDED.cron_database,
       schedule = EXCLUDED.schedule, cron_version = EXCLUDED.cron_version;
COMMIT;
\endif
