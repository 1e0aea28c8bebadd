-- Deploy call_timeout_reaper:cron/call_reaper_warden to pg
-- Schedules the pg_cron job messenger-call-reaper-warden, every minute, CALLing
-- messenger.run_call_reaper_warden() (a check per second; see there). It belongs to the
-- deploying role: ending a superuser's backend that holds the reaper's lock takes a superuser,
-- and the reaper's job role must hold no such right. The deploying role's statement_timeout,
-- if any, must allow a one-minute CALL.

SELECT :'scheduler' = 'none' AS no_scheduler \gset
\if :no_scheduler
\else
BEGIN;

-- PERFORM, not SELECT: sqitch deploy would print the job id.
DO $$
BEGIN
    PERFORM cron.schedule('messenger-call-reaper-warden', '* * * * *', 'CALL messenger.run_call_reaper_warden()');
END
$$;

COMMIT;
\endif
