-- Deploy call_timeout_reaper:triggers/call_reaper_settings_polling to pg
-- The scheduled job runs a cycle at each polling_interval tick of the minute (pg_cron 1.4 has no
-- sub-minute schedules; on 1.5+ the native "N seconds" schedule is used). Ticks only line up
-- with the minute when the interval is a whole number of seconds dividing 60, so any other
-- value is refused when it is set (SQLSTATE 22023), not discovered by a failing job.
-- pg_cron 1.5+ runs the job on a native '<n> seconds' schedule, so a new polling_interval
-- reschedules the job in the same transaction (cron.alter_job: the updating role must be a
-- superuser or own the job, as for any change to it); pg_cron 1.4 re-reads the setting at every
-- minute's CALL and needs nothing.

BEGIN;

CREATE OR REPLACE FUNCTION messenger._call_reaper_polling_guard()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_seconds numeric := extract(epoch FROM NEW.polling_interval);
    v_version integer[];
    v_jobid   bigint;
BEGIN
    IF v_seconds <> trunc(v_seconds) OR v_seconds NOT BETWEEN 1 AND 60
       OR 60 % v_seconds::integer <> 0 THEN
        RAISE EXCEPTION 'polling_interval must be a whole number of seconds that divides 60, got %',
            NEW.polling_interval
            USING ERRCODE = '22023',
                  DETAIL = 'The scheduled job runs one cycle at each tick of the minute.',
                  HINT = 'Use one of 1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30 or 60 seconds; the default is 15 seconds.';
    END IF;

    SELECT string_to_array(split_part(e.extversion, '-', 1), '.')::integer[] INTO v_version
      FROM pg_catalog.pg_extension AS e WHERE e.extname = 'pg_cron';
    IF TG_OP = 'UPDATE' AND NEW.polling_interval IS DISTINCT FROM OLD.polling_interval
       AND v_version >= ARRAY[1, 5] THEN
        SELECT j.jobid INTO v_jobid
          FROM cron.job AS j
         WHERE j.jobname = 'messenger-call-timeout-reaper' AND j.username = 'messenger_call_reaper';
        IF v_jobid IS NOT NULL THEN
            -- Same rule as cron/call_reaper: a whole minute is the classic schedule.
            PERFORM cron.alter_job(v_jobid, schedule => CASE WHEN v_seconds < 60
                                                             THEN format('%s seconds', v_seconds::integer)
                                                             ELSE '* * * * *' END);
            RAISE LOG 'call_reaper event=job_rescheduled polling_interval=%', NEW.polling_interval;
        END IF;
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION messenger._call_reaper_polling_guard() IS
    'Private: refuses a polling_interval that is not a whole number of seconds dividing 60 (SQLSTATE 22023).';
REVOKE ALL ON FUNCTION messenger._call_reaper_polling_guard() FROM PUBLIC;

CREATE TRIGGER call_reaper_settings_polling_guard
    BEFORE INSERT OR UPDATE OF polling_interval ON messenger.call_reaper_settings
    FOR EACH ROW EXECUTE FUNCTION messenger._call_reaper_polling_guard();

-- The stored row predates the trigger: validate it now rather than at the job's first run.
UPDATE messenger.call_reaper_settings SET polling_interval = polling_interval;

COMMIT;
