-- Deploy call_timeout_reaper:functions/resume_call_reaper to pg

BEGIN;

-- messenger.resume_call_reaper() RETURNS boolean
--
-- Resumes the scheduled reaper paused by messenger.pause_call_reaper(): clears
-- messenger.call_reaper_settings.paused; the job's next CALL (within a minute on pg_cron 1.4,
-- one polling interval on 1.5+) runs cycles again. Returns true when it resumed a paused
-- reaper, false when it was running already (idempotent). It does not touch the pg_cron job:
-- a job a DBA deactivated with cron.alter_job stays so (messenger.call_reaper_status() shows
-- both). SECURITY INVOKER: the caller needs UPDATE on messenger.call_reaper_settings.
CREATE OR REPLACE FUNCTION messenger.resume_call_reaper()
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_was_paused boolean;
BEGIN
    SELECT s.paused INTO STRICT v_was_paused FROM messenger.call_reaper_settings AS s FOR UPDATE;
    IF v_was_paused THEN
        UPDATE messenger.call_reaper_settings SET paused = false;
        RAISE LOG 'call_reaper event=resumed by=%', session_user;
    END IF;
    RETURN v_was_paused;
END
$$;

COMMENT ON FUNCTION messenger.resume_call_reaper() IS
$$Resumes the scheduled call-timeout reaper (settings.paused = false). Returns false if it was not paused. Usage: SELECT messenger.resume_call_reaper();$$;
REVOKE ALL ON FUNCTION messenger.resume_call_reaper() FROM PUBLIC;

COMMIT;
