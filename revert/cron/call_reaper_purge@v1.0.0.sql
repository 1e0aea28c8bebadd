-- Revert call_timeout_reaper:cron/call_reaper_purge from pg
-- By job id and name, whoever scheduled it: the reverting role may differ from the deployer.

BEGIN;

DO $$
BEGIN
    IF pg_catalog.to_regclass('cron.job') IS NULL THEN
        RETURN;
    END IF;
    -- PERFORM, not SELECT: sqitch revert would print the result.
    PERFORM cron.unschedule(j.jobid)
      FROM cron.job AS j
     WHERE j.jobname = 'messenger-call-reaper-purge' AND j.database = current_database();
END
$$;

COMMIT;
