-- Deploy call_timeout_reaper:cron/call_reaper_purge to pg
-- Schedules the pg_cron job messenger-call-reaper-purge: at minute 17 of every hour it runs
-- messenger.purge_call_reaper_history() (run ledger and the reaper's cron.job_run_details older
-- than settings.retention). It belongs to the deploying role, not to messenger_call_reaper:
-- deleting history with a chosen cutoff, and other roles' run details, are rights the job role
-- must not hold, while the deployer (a superuser: it schedules the reaper's job for
-- another role) has them anyway. Deploy after cron/call_reaper, in the same database.

SELECT :'scheduler' = 'none' AS no_scheduler \gset
\if :no_scheduler
\else
BEGIN;

-- PERFORM, not SELECT: sqitch deploy would print the job id.
DO $$
BEGIN
    PERFORM cron.schedule('messenger-call-reaper-purge', '17 * * * *',
                          'SELECT * FROM messenger.purge_call_reaper_history()');
END
$$;

COMMIT;
\endif
