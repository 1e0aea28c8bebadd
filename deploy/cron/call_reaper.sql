-- Deploy call_timeout_reaper:cron/call_reaper to pg
-- Schedules the pg_cron job messenger-call-timeout-reaper, run as messenger_call_reaper (never
-- a superuser), CALLing messenger.run_call_reaper_ticks() in THIS database, and records it in
-- messenger.call_reaper_cron_jobs. Where pg_cron keeps it:
--   * cron_database=none (the default): here; this database must be cron.database_name (any
--     other is refused with 55000, its HINT naming the cross-database mode). cron.schedule.
--   * --set cron_database=NAME, the cross-database mode: in NAME (cron.database_name, e.g.
--     postgres), through cron.schedule_in_database(..., database => this one). psql \connects to
--     NAME with the same host, port and user, schedules there in a transaction of its own and comes back to
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
-- for the whole cluster. The job keeps the name it has; a new one gets the fixed name
-- (messenger.call_reaper_job_name('reaper'), which tools and alerts rely on) unless another database's job holds it, then that
-- name suffixed with '-<this database>' (docs/design.md, "Scheduling"). Here, where the name is
-- looked up in cron.job by the fixed name, another database holding it is refused (55000).

SELECT :'scheduler' = 'none' AS no_scheduler \gset
\if :no_scheduler
\echo 'scheduler=none: messenger-call-timeout-reaper is not scheduled; run the reaper from your own scheduler (README)'
\else
BEGIN;

-- Facts of this database, for the steps that run in the cron database (psql variables there).
SELECT pg_catalog.current_database() AS product_database,
       :'cron_database' <> 'none' AS cross_db,
       CASE WHEN :'cron_database' <> 'none' THEN :'cron_database' ELSE pg_catalog.current_database() END AS cron_database,
       CASE WHEN s.polling_interval < interval '60 seconds'
            THEN format('%s seconds', extract(epoch FROM s.polling_interval)::integer) ELSE '* * * * *' END AS schedule_1_5,
       pg_catalog.set_config('call_reaper.cron_database', :'cron_database', true) AS cron_database_arg
  FROM messenger.call_reaper_settings AS s \gset
DO $$
BEGIN
    IF current_setting('call_reaper.cron_database') = pg_catalog.current_database() THEN
        RAISE EXCEPTION 'cron_database names this database (%)', pg_catalog.current_database()
            USING ERRCODE = '22023',
                  HINT = 'The jobs of the database that is cron.database_name are scheduled without --set cron_database.';
    END IF;
END
$$;
COMMIT;
\set job_kind reaper
\set job_spec messenger-call-timeout-reaper
\set job_command 'CALL messenger.run_call_reaper_ticks()'
\set schedule_1_4 '* * * * *'

\if :cross_db
\connect :"cron_database"
BEGIN;
SELECT pg_catalog.set_config('call_reaper.product_database', :'product_database', true) AS product_database_set \gset
DO $$
DECLARE
    v_product  text := current_setting('call_reaper.product_database');
    v_sched_in constant text := 'cron.schedule_in_database(text,text,text,text,text,boolean)';
    v_cron_db  text;
    v_extver   text;
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
END
$$;
\else
BEGIN;
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
                  HINT = 'Set shared_preload_libraries = ''pg_cron'' and cron.database_name, then restart the server; or sqitch deploy --set scheduler=none to run the reaper from your own scheduler.';
    END IF;
    IF v_database <> current_database() THEN
        RAISE EXCEPTION 'pg_cron keeps its jobs in cron.database_name (%), not %', v_database, current_database()
            USING ERRCODE = '55000',
                  HINT = pg_catalog.format('Deploy in the cross-database mode: sqitch deploy --set cron_database=%s schedules the jobs there, to run in this database (README "Server settings"). Or --set scheduler=none for no pg_cron jobs.', v_database);
    END IF;
END
$$;

SET LOCAL client_min_messages = warning;   -- not "already exists, skipping"
CREATE EXTENSION IF NOT EXISTS pg_cron;
\endif

-- No lasting grant on schema cron to the job role: pg_cron lets any role with USAGE there
-- schedule, unschedule and alter its own jobs, and this job is owned by that role. The job only
-- needs EXECUTE on its procedure; pausing lives in messenger.call_reaper_settings.paused and
-- retention in the deployer's job of cron/call_reaper_purge.
SELECT current_user AS deployer \gset
GRANT USAGE ON SCHEMA cron TO messenger_call_reaper;
\if :cross_db
GRANT EXECUTE ON FUNCTION cron.schedule_in_database(text, text, text, text, text, boolean) TO messenger_call_reaper;
\endif
SET LOCAL ROLE messenger_call_reaper;
\if :cross_db
\else
DO $$
DECLARE
    v_spec  constant text := 'messenger-call-timeout-reaper';
    v_other text;
BEGIN
    -- The routines here find the job by its fixed name: another database's job of that name
    -- (scheduled from there into this cron database first) cannot be shared.
    SELECT j.database INTO v_other FROM cron.job AS j
     WHERE j.jobname = v_spec AND j.username = current_user AND j.database <> pg_catalog.current_database();
    IF v_other IS NOT NULL THEN
        RAISE EXCEPTION 'the job % of messenger_call_reaper runs in database %', v_spec, v_other
            USING ERRCODE = '55000',
                  HINT = 'Deploy the reaper of the cron database itself before any other database''s, or revert that one first.';
    END IF;
END
$$;
\endif
\ir include/schedule_job.psql
SET LOCAL ROLE :"deployer";
\if :cross_db
REVOKE EXECUTE ON FUNCTION cron.schedule_in_database(text, text, text, text, text, boolean) FROM messenger_call_reaper;
\endif
REVOKE USAGE ON SCHEMA cron FROM messenger_call_reaper;

\if :cross_db
COMMIT;
\connect :"product_database"
BEGIN;
\endif
-- The job runs here: on pg_cron 1.4 its minute of ticks needs the longer statement_timeout here.
SELECT pg_catalog.set_config('call_reaper.cron_version', :'extversion', true) AS cron_version_set \gset
DO $$
BEGIN
    IF string_to_array(split_part(current_setting('call_reaper.cron_version'), '-', 1), '.')::integer[] < ARRAY[1, 5] THEN
        EXECUTE format('ALTER ROLE messenger_call_reaper IN DATABASE %I SET statement_timeout = %L',
                       pg_catalog.current_database(), '90s');
    END IF;
END
$$;
\ir include/warn_extversion_lag.psql
-- The reaper's row has always recorded extversion as pg_extension has it.
\set cron_version :extversion
\ir include/record_job.psql
COMMIT;

\endif
