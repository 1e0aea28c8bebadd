-- Verify call_timeout_reaper:cron/call_reaper_warden on pg

SELECT :'scheduler' = 'none' AS no_scheduler \gset
\if :no_scheduler
\else
BEGIN;

DO $$
DECLARE
    j cron.job;
BEGIN
    SELECT * INTO STRICT j FROM cron.job
     WHERE jobname = 'messenger-call-reaper-warden' AND database = current_database();
    IF j.command <> 'CALL messenger.run_call_reaper_warden()' OR j.schedule <> '* * * * *' THEN
        RAISE EXCEPTION 'the warden job must CALL messenger.run_call_reaper_warden() every minute';
    END IF;
END
$$;

ROLLBACK;
\endif
