-- Verify call_timeout_reaper:functions/call_reaper_status on pg

BEGIN;

DO $$
DECLARE
    v record;
BEGIN
    SELECT * INTO STRICT v FROM messenger.call_reaper_status();
    IF NOT coalesce(v.job_scheduled, false) THEN
        RAISE EXCEPTION 'call_reaper_status does not see the job messenger-call-timeout-reaper';
    END IF;
END
$$;

ROLLBACK;
