-- Revert call_timeout_reaper:cron/call_reaper from pg
-- By job id: cron.unschedule(name) only finds jobs of the current user, and the job belongs to
-- messenger_call_reaper. The pg_cron extension stays: other jobs may use it.

BEGIN;

DO $$
BEGIN
    -- PERFORM, not SELECT: sqitch revert would print the result.
    PERFORM cron.unschedule(j.jobid)
      FROM cron.job AS j
     WHERE j.jobname = 'messenger-call-timeout-reaper' AND j.username = 'messenger_call_reaper';
END
$$;

DO $$
BEGIN
    EXECUTE format('ALTER ROLE messenger_call_reaper IN DATABASE %I RESET statement_timeout', current_database());
END
$$;

COMMIT;
