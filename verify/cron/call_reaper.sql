-- Verify call_timeout_reaper:cron/call_reaper on pg

BEGIN;

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
