-- Verify call_timeout_reaper:cron/call_reaper on pg
-- The recorded job exists where it is kept (here, or in cron_database), for this database, with
-- its command and schedule. pg_cron shows a role only its own jobs (row-level security), so the
-- check runs as the job role, with the same passing grant as the deploy, rolled back with the
-- verify.

SELECT :'scheduler' = 'none' AS no_scheduler \gset
\if :no_scheduler
\else
\set job_kind reaper
\set job_command 'CALL messenger.run_call_reaper_ticks()'
\set as_job_role true
\ir include/check_job.psql
\endif
