-- Verify call_timeout_reaper:cron/call_reaper_warden on pg

SELECT :'scheduler' = 'none' AS no_scheduler \gset
\if :no_scheduler
\else
BEGIN;

DO $$
DECLARE
    j cron.job;
    v_schedule text;
BEGIN
    SELECT CASE WHEN string_to_array(split_part(e.extversion, '-', 1), '.')::integer[] >= ARRAY[1, 5]
                THEN '1 seconds' ELSE '* * * * *' END
      INTO STRICT v_schedule
      FROM pg_catalog.pg_extension AS e WHERE e.extname = 'pg_cron';
    SELECT * INTO STRICT j FROM cron.job
     WHERE jobname = 'messenger-call-reaper-warden' AND database = current_database();
    IF j.command <> 'CALL messenger.run_call_reaper_warden()' OR j.schedule <> v_schedule THEN
        RAISE EXCEPTION 'the warden job must CALL messenger.run_call_reaper_warden() on schedule %, not %',
            v_schedule, j.schedule;
    END IF;
END
$$;

ROLLBACK;
\endif
