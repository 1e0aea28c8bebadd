-- Verify call_timeout_reaper:cron/call_reaper on pg
-- pg_cron shows a role only its own jobs (row-level security), so the check runs as the job
-- role, with the same passing grant as the deploy, rolled back with the verify.

SELECT :'scheduler' = 'none' AS no_scheduler \gset
\if :no_scheduler
\else
BEGIN;

GRANT USAGE ON SCHEMA cron TO messenger_call_reaper;
SET LOCAL ROLE messenger_call_reaper;
DO $$
DECLARE
    j cron.job;
BEGIN
    SELECT * INTO STRICT j FROM cron.job
     WHERE jobname = 'messenger-call-timeout-reaper' AND username = 'messenger_call_reaper';
    IF NOT coalesce(j.command = 'CALL messenger.run_call_reaper_ticks()', false) THEN
        RAISE EXCEPTION 'the reaper job must CALL messenger.run_call_reaper_ticks()';
    END IF;
    IF NOT coalesce(j.database = current_database(), false) THEN
        RAISE EXCEPTION 'the reaper job must run in this database';
    END IF;
END
$$;

ROLLBACK;
\endif
