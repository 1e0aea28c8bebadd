-- Verify call_timeout_reaper:cron/call_reaper_purge on pg

SELECT :'scheduler' = 'none' AS no_scheduler \gset
\if :no_scheduler
\else
BEGIN;

DO $$
DECLARE
    j cron.job;
BEGIN
    SELECT * INTO STRICT j FROM cron.job
     WHERE jobname = 'messenger-call-reaper-purge' AND database = current_database();
    IF j.command <> 'SELECT * FROM messenger.purge_call_reaper_history()' THEN
        RAISE EXCEPTION 'the purge job must run messenger.purge_call_reaper_history()';
    END IF;
END
$$;

ROLLBACK;
\endif
