-- Revert call_timeout_reaper:cron/call_reaper_warden from pg
-- Back to the released schedule ('* * * * *' on every pg_cron version): the deployer's job of
-- that name is re-scheduled in place, as the released deploy script does. Only where the job
-- exists: a revert is run without the deploy's --set scheduler=none, and with scheduler=none
-- (or no pg_cron) there is no job to put back.

BEGIN;

-- PERFORM, not SELECT: sqitch revert would print the job id.
DO $$
BEGIN
    IF pg_catalog.to_regclass('cron.job') IS NULL THEN
        RETURN;
    END IF;
    IF EXISTS (SELECT FROM cron.job AS j
                WHERE j.jobname = 'messenger-call-reaper-warden' AND j.database = pg_catalog.current_database()) THEN
        PERFORM cron.schedule('messenger-call-reaper-warden', '* * * * *', 'CALL messenger.run_call_reaper_warden()');
    END IF;
END
$$;

COMMIT;
