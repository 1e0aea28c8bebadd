-- Deploy call_timeout_reaper:cron/call_reaper to pg
-- Schedules the pg_cron job messenger-call-timeout-reaper, run as messenger_call_reaper (never
-- a superuser), CALLing messenger.run_call_reaper_ticks() (see there for the tick loop).
--   pg_cron >= 1.5: native schedule '<polling_interval> seconds', one cycle per run.
--   pg_cron <  1.5 (Debian 12 ships 1.4): '* * * * *', the procedure ticks within the minute.
--     A CALL's statement_timeout covers the whole CALL, so the job role's 30 s would cancel
--     the minute of ticks: in THIS database the role gets statement_timeout = 90s (one minute
--     of ticks + the 30 s max run duration; the procedure starts a tick only while 30 s of that
--     budget remain). The role-wide 30 s stays for every other database.
-- pg_cron can only be created in cron.database_name; deploying elsewhere stops here with a
-- clear error instead of a job that never runs.
-- pg_cron lets only a superuser schedule a job for another role, and a managed service's admin
-- role is none. So the job is scheduled BY the job role: inside this one transaction the deployer
-- grants it USAGE on schema cron, SET ROLE to it, schedules, returns to itself and revokes the
-- grant. No other session ever sees the grant, and afterwards the job role cannot alter or
-- unschedule its own job. The deployer needs membership in messenger_call_reaper (the role's
-- deploy gives it) and USAGE on schema cron WITH GRANT OPTION (or to own it): a superuser has
-- both. Revert and verify do the same.
-- sqitch deploy --set scheduler=none schedules nothing (the team runs the reaper itself).

SELECT :'scheduler' = 'none' AS no_scheduler \gset
\if :no_scheduler
\echo 'scheduler=none: messenger-call-timeout-reaper is not scheduled; run the reaper from your own scheduler (README)'
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
                  HINT = 'Set shared_preload_libraries = ''pg_cron'' and cron.database_name, then restart the server.';
    END IF;
    IF v_database <> current_database() THEN
        RAISE EXCEPTION 'the reaper must be deployed into cron.database_name (%), not %',
            v_database, current_database()
            USING ERRCODE = '55000',
                  HINT = 'pg_cron runs jobs only in cron.database_name: deploy there, or change that setting and restart.';
    END IF;
END
$$;

CREATE EXTENSION IF NOT EXISTS pg_cron;

-- No lasting grant on schema cron to the job role: pg_cron lets any role with USAGE there
-- schedule, unschedule and alter its own jobs, and this job is owned by that role. The job only
-- needs EXECUTE on its procedure; pausing lives in messenger.call_reaper_settings.paused and
-- retention in the deployer's job of cron/call_reaper_purge.

DO $$
DECLARE
    v_version  integer[];
    v_seconds  integer;
    v_schedule text;
    v_deployer name := current_user;
BEGIN
    SELECT string_to_array(split_part(e.extversion, '-', 1), '.')::integer[] INTO STRICT v_version
      FROM pg_catalog.pg_extension AS e WHERE e.extname = 'pg_cron';
    SELECT extract(epoch FROM s.polling_interval)::integer INTO STRICT v_seconds
      FROM messenger.call_reaper_settings AS s;

    IF v_version >= ARRAY[1, 5] AND v_seconds < 60 THEN
        v_schedule := format('%s seconds', v_seconds);
    ELSE
        v_schedule := '* * * * *';
    END IF;
    IF v_version < ARRAY[1, 5] THEN
        EXECUTE format('ALTER ROLE messenger_call_reaper IN DATABASE %I SET statement_timeout = %L',
                       current_database(), '90s');
    END IF;

    GRANT USAGE ON SCHEMA cron TO messenger_call_reaper;
    SET LOCAL ROLE messenger_call_reaper;
    PERFORM cron.schedule('messenger-call-timeout-reaper', v_schedule, 'CALL messenger.run_call_reaper_ticks()');
    EXECUTE format('SET LOCAL ROLE %I', v_deployer);
    REVOKE USAGE ON SCHEMA cron FROM messenger_call_reaper;
END
$$;

COMMIT;

\endif
