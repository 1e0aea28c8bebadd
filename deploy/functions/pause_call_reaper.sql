-- Deploy call_timeout_reaper:functions/pause_call_reaper to pg

BEGIN;

-- messenger.pause_call_reaper() RETURNS boolean
--
-- Pauses the scheduled reaper: sets messenger.call_reaper_settings.paused, which the job's
-- procedure (run_call_reaper_ticks) reads before every tick and every second while it waits.
-- Once the caller COMMITs, no new scheduled cycle starts; a cycle already running finishes
-- (scripts/reaper-job pause waits for that). Cycles run by hand are not affected. Returns true
-- when it paused a running reaper, false when it was already paused (idempotent).
--
-- Why a flag in the reaper's own settings and not cron.alter_job(active := false): the job
-- role then needs no access to schema cron at all (with it, it could unschedule or rewrite its
-- own job), the flag is transactional with the caller's other changes, and it works the same on
-- pg_cron 1.4 and 1.5+. pg_cron keeps launching the job, whose CALL returns at once.
--
-- SECURITY INVOKER: the caller needs UPDATE on messenger.call_reaper_settings, as for any
-- option (a DBA); EXECUTE is revoked from PUBLIC and granted to no reaper role.
CREATE OR REPLACE FUNCTION messenger.pause_call_reaper()
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_was_paused boolean;
BEGIN
    SELECT s.paused INTO STRICT v_was_paused FROM messenger.call_reaper_settings AS s FOR UPDATE;
    IF NOT v_was_paused THEN
        UPDATE messenger.call_reaper_settings SET paused = true;
        RAISE LOG 'call_reaper event=paused by=%', session_user;
    END IF;
    RETURN NOT v_was_paused;
END
$$;

COMMENT ON FUNCTION messenger.pause_call_reaper() IS
$$Pauses the scheduled call-timeout reaper (settings.paused = true); effective at the next tick once committed. Returns false if it was already paused. Usage: SELECT messenger.pause_call_reaper();$$;
REVOKE ALL ON FUNCTION messenger.pause_call_reaper() FROM PUBLIC;

COMMIT;
