-- Verify call_timeout_reaper:cron/call_reaper_purge on pg

SELECT :'scheduler' = 'none' AS no_scheduler \gset
\if :no_scheduler
\else
\set job_kind purge
\set job_command 'SELECT * FROM messenger.purge_call_reaper_history()'
\set as_job_role false
\ir include/check_job.psql
\endif
