-- Verify call_timeout_reaper:functions/call_reaper_job_name on pg

BEGIN;

DO $$
BEGIN
    IF messenger.call_reaper_job_name('reaper') IS NULL THEN
        RAISE EXCEPTION 'messenger.call_reaper_job_name() must name the reaper job';
    END IF;
END
$$;

ROLLBACK;
