-- Verify call_timeout_reaper:functions/call_reaper_status on pg
-- It answers one row with the lock holder's columns. Whether it sees the job depends on who asks
-- (pg_cron shows a role only its own jobs) and on the scheduler chosen:
-- verify/cron/call_reaper.sql checks the job itself.

BEGIN;

DO $$
DECLARE
    v record;
BEGIN
    SELECT * INTO STRICT v FROM messenger.call_reaper_status();
    IF v.paused IS NULL OR v.job_scheduled IS NULL THEN
        RAISE EXCEPTION 'call_reaper_status must answer paused and job_scheduled';
    END IF;
    PERFORM lock_holder_pid, lock_held_since, lock_holder_role, lock_holder_state,
            lock_holder_is_cycle, lock_warden_can_end, cron_database
       FROM messenger.call_reaper_status();
END
$$;

ROLLBACK;
