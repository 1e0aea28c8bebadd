-- Deploy call_timeout_reaper:cron/call_reaper_warden to pg
-- Schedules the pg_cron job messenger-call-reaper-warden, CALLing
-- messenger.run_call_reaper_warden() in this database, by the pg_cron version (as cron/call_reaper),
-- and records it in messenger.call_reaper_cron_jobs (the procedure reads its schedule there):
--   * 1.5+: '1 seconds', one check per run: a job slot for milliseconds a second (providers cap
--     concurrent jobs: cron.max_running_jobs is 5 on RDS).
--   * 1.4: '* * * * *' (nothing shorter exists), the procedure checks once a second for the
--     minute; the deploying role's statement_timeout, if any, must allow a one-minute CALL.
-- It belongs to the deploying role: ending a superuser's backend that holds the reaper's lock
-- takes a superuser, and the reaper's job role must hold no such right. Kept where
-- cron/call_reaper kept the reaper's job, under the same name rule (docs/design.md, "Scheduling").
-- After ALTER EXTENSION pg_cron UPDATE from 1.4 the job stays on the minute (and the procedure
-- keeps its loop) until rescheduled: docs/managed-postgresql.md, "pg_cron versions". An extversion
-- below the installed library's version is scheduled by extversion with a WARNING (as cron/call_reaper).

SELECT :'scheduler' = 'none' AS no_scheduler \gset
\if :no_scheduler
\else
\set job_kind warden
\set job_spec messenger-call-reaper-warden
\set job_command 'CALL messenger.run_call_reaper_warden()'
\set schedule_1_5 '1 seconds'
\set schedule_1_4 '* * * * *'
\set warn_lag true
\set purge_details false
\ir include/schedule_beside_reaper.psql
\endif
