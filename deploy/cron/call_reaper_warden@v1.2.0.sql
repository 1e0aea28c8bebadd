-- Deploy call_timeout_reaper:cron/call_reaper_warden to pg
-- Schedules the pg_cron job messenger-call-reaper-warden, CALLing
-- messenger.run_call_reaper_warden(), by the pg_cron version (pg_extension, as cron/call_reaper):
--   * 1.5+: '1 seconds', one check per run: a job slot for milliseconds a second, where the
--     released schedule held one all the time (providers cap concurrent jobs:
--     cron.max_running_jobs is 5 on RDS).
--   * 1.4: '* * * * *' (nothing shorter exists), the procedure checks once a second for the
--     minute; the deploying role's statement_timeout, if any, must allow a one-minute CALL.
-- cron.schedule by name replaces the schedule of the deployer's job of that name in place (an
-- upgrade keeps its job id). It belongs to the deploying role: ending a superuser's backend that
-- holds the reaper's lock takes a superuser, and the reaper's job role must hold no such right.
-- After ALTER EXTENSION pg_cron UPDATE from 1.4 the job stays on the minute (and the procedure
-- keeps its loop) until rescheduled: docs/managed-postgresql.md, "pg_cron versions".

SELECT :'scheduler' = 'none' AS no_scheduler \gset
\if :no_scheduler
\else
BEGIN;

DO $$
DECLARE
    v_version integer[];
BEGIN
    SELECT string_to_array(split_part(e.extversion, '-', 1), '.')::integer[] INTO STRICT v_version
      FROM pg_catalog.pg_extension AS e WHERE e.extname = 'pg_cron';
    -- PERFORM, not SELECT: sqitch deploy would print the job id.
    PERFORM cron.schedule('messenger-call-reaper-warden',
                          CASE WHEN v_version >= ARRAY[1, 5] THEN '1 seconds' ELSE '* * * * *' END,
                          'CALL messenger.run_call_reaper_warden()');
END
$$;

COMMIT;
\endif
