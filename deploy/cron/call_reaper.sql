-- Deploy call_timeout_reaper:cron/call_reaper to pg
-- Schedules the pg_cron job messenger-call-timeout-reaper, run as messenger_call_reaper (never
-- a superuser), CALLing messenger.run_call_reaper_ticks() in THIS database, and records it in
-- messenger.call_reaper_cron_jobs. Where pg_cron keeps it:
--   * scheduler=pg_cron (the default): here; this database must be cron.database_name (the
--     released script, run first on a fresh deploy, refuses any other). cron.schedule.
--   * --set scheduler=none --set cron_database=NAME: in NAME (cron.database_name, e.g. postgres),
--     through cron.schedule_in_database(..., database => this one). scheduler=none keeps the
--     released scripts, which know only the first way, from running. psql \connects to NAME with
--     the same host, port and user, schedules there in a transaction of its own and comes back to
--     record the job: that step is not atomic with this database's, so it is re-run safe (the
--     job is scheduled by name, in place, and keeps the name it has).
-- The schedule, by pg_extension.extversion (of the database holding pg_cron):
--   pg_cron >= 1.5: native '<polling_interval> seconds', one cycle per run.
--   pg_cron <  1.5 (Debian 12 ships 1.4): '* * * * *', the procedure ticks within the minute.
--   extversion below the installed library's version (pg_available_extensions.default_version)
--   is scheduled by extversion all the same, with a WARNING naming both and the fix.
--     A CALL's statement_timeout covers the whole CALL, so the job role's 30 s would cancel
--     the minute of ticks: in THIS database the role gets statement_timeout = 90s (one minute
--     of ticks + the 30 s max run duration). The role-wide 30 s stays for every other database.
-- pg_cron lets only a superuser schedule a job for another role, and a managed service's admin
-- role is none. So the job is scheduled BY the job role: inside one transaction the deployer
-- grants it USAGE on schema cron (and, for another database, EXECUTE on
-- cron.schedule_in_database, which pg_cron revokes from PUBLIC), SET ROLE to it, schedules,
-- returns to itself and revokes. No other session ever sees the grants, and afterwards the job
-- role cannot alter or unschedule its own job. The deployer needs membership in
-- messenger_call_reaper (the role's deploy gives it), USAGE on schema cron WITH GRANT OPTION and,
-- for another database, EXECUTE on cron.schedule_in_database WITH GRANT OPTION (refused with
-- 42501 naming that grant when missing). A superuser has all of them.
-- Job names: pg_cron keys a job by (jobname, username), and messenger_call_reaper is one role
-- for the whole cluster. The job keeps the name it has; a new one gets the SPEC name
-- (messenger.call_reaper_job_name('reaper')) unless another database's job holds it, then that
-- name suffixed with '-<this database>' (docs/design.md, "Scheduling"). Here, where the name is
-- looked up in cron.job by the SPEC name, another database holding it is refused (55000).

SELECT :'scheduler' = 'none' AND :'cron_database' = 'none' AS no_scheduler \gset
\if :no_scheduler
\echo 'scheduler=none: messenger-call-timeout-reaper is not scheduled; run the reaper from your own scheduler (README)'
\else
BEGIN;

-- Facts of this database, for the steps that run in the cron database (psql variables there).
SELECT pg_catalog.current_database() AS product_database,
       :'scheduler' = 'none' AS cross_db,
       CASE WHEN :'scheduler' = 'none' THEN :'cron_database' ELSE pg_catalog.current_database() END AS cron_database,
       extract(epoch FROM s.polling_interval)::integer AS polling_seconds,
       pg_catalog.set_config('call_reaper.cron_database', :'cron_database', true) AS cron_database_arg
  FROM messenger.call_reaper_settings AS s \gset
DO $$
BEGIN
    IF current_setting('call_reaper.cron_database') = pg_catalog.current_database() THEN
        RAISE EXCEPTION 'cron_database names this database (%)', pg_catalog.current_database()
            USING ERRCODE = '22023',
                  HINT = 'The jobs of the database that is cron.database_name are scheduled without --set scheduler=none and cron_database.';
    END IF;
END
$$;
COMMIT;

\if :cross_db
\connect :"cron_database"
BEGIN;
SELECT pg_catalog.set_config('call_reaper.product_database', :'product_database', true) AS product_database_set,
       pg_catalog.set_config('call_reaper.polling_seconds', :'polling_seconds', true) AS polling_seconds_set \gset
DO $$
DECLARE
    v_product  text := current_setting('call_reaper.product_database');
    v_seconds  integer := current_setting('call_reaper.polling_seconds')::integer;
    v_spec     constant text := 'messenger-call-timeout-reaper';
    v_sched_in constant text := 'cron.schedule_in_database(text,text,text,text,text,boolean)';
    v_deployer name := current_user;
    v_cron_db  text;
    v_extver   text;
    v_version  integer[];
    v_schedule text;
    v_name     text;
BEGIN
    BEGIN
        v_cron_db := current_setting('cron.database_name', true);
    EXCEPTION WHEN insufficient_privilege THEN
        v_cron_db := NULL;   -- readable by superusers and pg_read_all_settings only
    END;
    SELECT e.extversion INTO v_extver FROM pg_catalog.pg_extension AS e WHERE e.extname = 'pg_cron';
    IF v_extver IS NULL OR v_cron_db <> pg_catalog.current_database() THEN
        RAISE EXCEPTION 'database % is not where pg_cron keeps its jobs', pg_catalog.current_database()
            USING ERRCODE = '55000',
                  DETAIL = coalesce('cron.database_name is ' || v_cron_db || '.', 'pg_cron is not created here.'),
                  HINT = 'cron_database must name cron.database_name (SHOW cron.database_name), where pg_cron is created.';
    END IF;
    IF pg_catalog.to_regprocedure(v_sched_in) IS NULL THEN
        RAISE EXCEPTION 'pg_cron % cannot run jobs in another database', v_extver
            USING ERRCODE = '55000',
                  HINT = 'cron.schedule_in_database came with pg_cron 1.4: ALTER EXTENSION pg_cron UPDATE.';
    END IF;
    IF NOT pg_catalog.has_function_privilege(v_sched_in, 'EXECUTE WITH GRANT OPTION') THEN
        RAISE EXCEPTION 'role % may not schedule the reaper''s jobs in database %', current_user, v_product
            USING ERRCODE = '42501',
                  DETAIL = 'pg_cron revokes EXECUTE on cron.schedule_in_database from PUBLIC; the job role schedules its own job with it, granted by the deploying role for one transaction.',
                  HINT = pg_catalog.format('As the provider''s admin, in database %I: GRANT EXECUTE ON FUNCTION cron.schedule_in_database(text, text, text, text, text, boolean) TO %I WITH GRANT OPTION;',
                                           pg_catalog.current_database(), current_user);
    END IF;
    v_version := string_to_array(split_part(v_extver, '-', 1), '.')::integer[];
    v_schedule := CASE WHEN v_version >= ARRAY[1, 5] AND v_seconds < 60
                       THEN format('%s seconds', v_seconds) ELSE '* * * * *' END;

    GRANT USAGE ON SCHEMA cron TO messenger_call_reaper;
    EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO messenger_call_reaper', v_sched_in);
    SET LOCAL ROLE messenger_call_reaper;
    -- cron.job shows the job role its own jobs, in every database.
    SELECT j.jobname INTO v_name FROM cron.job AS j
     WHERE j.username = current_user AND j.database = v_product
       AND j.jobname IN (v_spec, v_spec || '-' || v_product);
    IF v_name IS NULL THEN
        v_name := CASE WHEN EXISTS (SELECT FROM cron.job AS j WHERE j.jobname = v_spec AND j.username = current_user)
                       THEN v_spec || '-' || v_product ELSE v_spec END;
    END IF;
    PERFORM cron.schedule_in_database(v_name, v_schedule, 'CALL messenger.run_call_reaper_ticks()', v_product);
    EXECUTE format('SET LOCAL ROLE %I', v_deployer);
    EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM messenger_call_reaper', v_sched_in);
    REVOKE USAGE ON SCHEMA cron FROM messenger_call_reaper;
    PERFORM pg_catalog.set_config('call_reaper.jobname', v_name, true),
            pg_catalog.set_config('call_reaper.schedule', v_schedule, true),
            pg_catalog.set_config('call_reaper.cron_version', v_extver, true);
END
$$;
SELECT current_setting('call_reaper.jobname') AS jobname, current_setting('call_reaper.schedule') AS schedule,
       current_setting('call_reaper.cron_version') AS cron_version \gset
COMMIT;
\connect :"product_database"
\endif

BEGIN;

\if :cross_db
-- The job runs here: on pg_cron 1.4 its minute of ticks needs the longer statement_timeout here.
SELECT pg_catalog.set_config('call_reaper.cron_version', :'cron_version', true) AS cron_version_set \gset
\else
DO $$
DECLARE
    v_database text;
BEGIN
    -- pg_cron lets only a superuser or pg_read_all_settings read its settings: a deployer with
    -- neither cannot check the database here, and pg_cron, already created in
    -- cron.database_name by the provider, is the check there.
    BEGIN
        v_database := current_setting('cron.database_name', true);
    EXCEPTION WHEN insufficient_privilege THEN
        RETURN;
    END;
    IF v_database IS NULL THEN
        RAISE EXCEPTION 'pg_cron is not loaded by this server'
            USING ERRCODE = '55000',
                  HINT = 'Set shared_preload_libraries = ''pg_cron'' and cron.database_name, then restart the server.';
    END IF;
    IF v_database <> current_database() THEN
        RAISE EXCEPTION 'pg_cron keeps its jobs in cron.database_name (%), not %', v_database, current_database()
            USING ERRCODE = '55000',
                  HINT = pg_catalog.format('sqitch deploy --set scheduler=none --set cron_database=%s schedules them there, to run here (README "Server settings").', v_database);
    END IF;
END
$$;

SET LOCAL client_min_messages = warning;   -- not "already exists, skipping"
CREATE EXTENSION IF NOT EXISTS pg_cron;

-- No lasting grant on schema cron to the job role: pg_cron lets any role with USAGE there
-- schedule, unschedule and alter its own jobs, and this job is owned by that role. The job only
-- needs EXECUTE on its procedure; pausing lives in messenger.call_reaper_settings.paused and
-- retention in the deployer's job of cron/call_reaper_purge.
DO $$
DECLARE
    v_spec     constant text := 'messenger-call-timeout-reaper';
    v_extver   text;
    v_version  integer[];
    v_seconds  integer;
    v_schedule text;
    v_other    text;
    v_deployer name := current_user;
BEGIN
    SELECT e.extversion INTO STRICT v_extver FROM pg_catalog.pg_extension AS e WHERE e.extname = 'pg_cron';
    v_version := string_to_array(split_part(v_extver, '-', 1), '.')::integer[];
    SELECT extract(epoch FROM s.polling_interval)::integer INTO STRICT v_seconds
      FROM messenger.call_reaper_settings AS s;
    v_schedule := CASE WHEN v_version >= ARRAY[1, 5] AND v_seconds < 60
                       THEN format('%s seconds', v_seconds) ELSE '* * * * *' END;

    GRANT USAGE ON SCHEMA cron TO messenger_call_reaper;
    SET LOCAL ROLE messenger_call_reaper;
    -- The routines here find the job by its SPEC name: another database's job of that name
    -- (scheduled from there into this cron database first) cannot be shared.
    SELECT j.database INTO v_other FROM cron.job AS j
     WHERE j.jobname = v_spec AND j.username = current_user AND j.database <> pg_catalog.current_database();
    IF v_other IS NOT NULL THEN
        RAISE EXCEPTION 'the job % of messenger_call_reaper runs in database %', v_spec, v_other
            USING ERRCODE = '55000',
                  HINT = 'Deploy the reaper of the cron database itself before any other database''s, or revert that one first.';
    END IF;
    PERFORM cron.schedule(v_spec, v_schedule, 'CALL messenger.run_call_reaper_ticks()');
    EXECUTE format('SET LOCAL ROLE %I', v_deployer);
    REVOKE USAGE ON SCHEMA cron FROM messenger_call_reaper;
    PERFORM pg_catalog.set_config('call_reaper.jobname', v_spec, true),
            pg_catalog.set_config('call_reaper.schedule', v_schedule, true),
            pg_catalog.set_config('call_reaper.cron_version', v_extver, true);
END
$$;
SELECT current_setting('call_reaper.jobname') AS jobname, current_setting('call_reaper.schedule') AS schedule,
       current_setting('call_reaper.cron_version') AS cron_version \gset
\endif

DO $$
BEGIN
    IF string_to_array(split_part(current_setting('call_reaper.cron_version'), '-', 1), '.')::integer[] < ARRAY[1, 5] THEN
        EXECUTE format('ALTER ROLE messenger_call_reaper IN DATABASE %I SET statement_timeout = %L',
                       pg_catalog.current_database(), '90s');
    END IF;
END
$$;

-- The schedule went by extversion, which lags the library until ALTER EXTENSION pg_cron UPDATE:
-- say so instead of silently taking the older version's path. pg_available_extensions reads the
-- server's control files, the same in every database of the cluster.
SELECT pg_catalog.set_config('call_reaper.cron_db', :'cron_database', true) AS cron_db_set,
       pg_catalog.set_config('call_reaper.jobname', :'jobname', true) AS jobname_set,
       pg_catalog.set_config('call_reaper.schedule', :'schedule', true) AS schedule_set \gset
DO $$
DECLARE
    v_extver  text := current_setting('call_reaper.cron_version');
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
VALUES ('reaper', :'jobname', :'cron_database', :'schedule', :'cron_version')
ON CONFLICT (kind) DO UPDATE
   SET jobname = EXCLUDED.jobname, cron_database = EXCLUDED.cron_database,
       schedule = EXCLUDED.schedule, cron_version = EXCLUDED.cron_version;

COMMIT;

\endif
