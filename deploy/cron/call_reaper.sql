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
-- Deploy as a superuser (CREATE EXTENSION pg_cron, scheduling for another role).

BEGIN;

DO $$
BEGIN
    IF current_setting('cron.database_name', true) IS NULL THEN
        RAISE EXCEPTION 'pg_cron is not loaded by this server'
            USING ERRCODE = '55000',
                  HINT = 'Set shared_preload_libraries = ''pg_cron'' and cron.database_name, then restart the server.';
    END IF;
    IF current_setting('cron.database_name') <> current_database() THEN
        RAISE EXCEPTION 'the reaper must be deployed into cron.database_name (%), not %',
            current_setting('cron.database_name'), current_database()
            USING ERRCODE = '55000',
                  HINT = 'pg_cron runs jobs only in cron.database_name: deploy there, or change that setting and restart.';
    END IF;
END
$$;

CREATE EXTENSION IF NOT EXISTS pg_cron;

-- No grant on schema cron to the job role: pg_cron lets any role with USAGE there schedule,
-- unschedule and alter its own jobs, and this job is owned by that role. The job only needs
-- EXECUTE on its procedure; pausing lives in messenger.call_reaper_settings.paused and
-- retention in the deployer's job of cron/call_reaper_purge.

DO $$
DECLARE
    v_version  integer[];
    v_seconds  integer;
    v_schedule text;
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

    PERFORM cron.schedule_in_database('messenger-call-timeout-reaper', v_schedule,
                                      'CALL messenger.run_call_reaper_ticks()',
                                      current_database(), 'messenger_call_reaper');
END
$$;

COMMIT;
