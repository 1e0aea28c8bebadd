-- Verify call_timeout_reaper:cron/call_reaper_warden on pg

SELECT :'scheduler' = 'none' AS no_scheduler \gset
\if :no_scheduler
\else
BEGIN;
-- check_job.psql holds the job to its recorded schedule: the record must be every second or minute.
DO $$
DECLARE
    v_schedule text;
BEGIN
    SELECT r.schedule INTO STRICT v_schedule FROM messenger.call_reaper_cron_jobs AS r WHERE r.kind = 'warden';
    IF v_schedule NOT IN ('1 seconds', '* * * * *') THEN
        RAISE EXCEPTION 'the warden job must CALL messenger.run_call_reaper_warden() every second or minute, not on %', v_schedule;
    END IF;
END
$$;
ROLLBACK;
\set job_kind warden
\set job_command 'CALL messenger.run_call_reaper_warden()'
\set as_job_role false
\ir include/check_job.psql
\endif
