-- Revert call_timeout_reaper:cron/call_reaper from pg
-- The job belongs to messenger_call_reaper, and pg_cron lets only a superuser or the job's owner
-- unschedule it: as in the deploy, the job role unschedules its own job inside this one
-- transaction, with a grant on schema cron that no other session ever sees. The pg_cron
-- extension stays: other jobs may use it. Nothing to do where no job was scheduled
-- (scheduler=none, or no pg_cron).

BEGIN;

DO $$
DECLARE
    v_deployer name := current_user;
BEGIN
    IF pg_catalog.to_regclass('cron.job') IS NULL
       OR NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'messenger_call_reaper') THEN
        RETURN;
    END IF;
    GRANT USAGE ON SCHEMA cron TO messenger_call_reaper;
    SET LOCAL ROLE messenger_call_reaper;
    -- PERFORM, not SELECT: sqitch revert would print the result.
    PERFORM cron.unschedule(j.jobid)
      FROM cron.job AS j
     WHERE j.jobname = 'messenger-call-timeout-reaper' AND j.username = 'messenger_call_reaper';
    EXECUTE format('SET LOCAL ROLE %I', v_deployer);
    REVOKE USAGE ON SCHEMA cron FROM messenger_call_reaper;
    EXECUTE format('ALTER ROLE messenger_call_reaper IN DATABASE %I RESET statement_timeout', current_database());
END
$$;

COMMIT;
