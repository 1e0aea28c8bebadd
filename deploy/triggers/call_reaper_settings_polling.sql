-- Deploy call_timeout_reaper:triggers/call_reaper_settings_polling to pg
-- The scheduled job runs a cycle at each polling_interval tick of the minute (pg_cron 1.4 has no
-- sub-minute schedules; on 1.5+ the native "N seconds" schedule is used). Ticks only line up
-- with the minute when the interval is a whole number of seconds dividing 60, so any other
-- value is refused when it is set (SQLSTATE 22023), not discovered by a failing job.
-- A second trigger, not an edit of the settings guard: that change is released.

BEGIN;

CREATE OR REPLACE FUNCTION messenger._call_reaper_polling_guard()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_seconds numeric := extract(epoch FROM NEW.polling_interval);
BEGIN
    IF v_seconds <> trunc(v_seconds) OR v_seconds NOT BETWEEN 1 AND 60
       OR 60 % v_seconds::integer <> 0 THEN
        RAISE EXCEPTION 'polling_interval must be a whole number of seconds that divides 60, got %',
            NEW.polling_interval
            USING ERRCODE = '22023',
                  DETAIL = 'The scheduled job runs one cycle at each tick of the minute.',
                  HINT = 'Use one of 1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30 or 60 seconds; the default is 15 seconds.';
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
