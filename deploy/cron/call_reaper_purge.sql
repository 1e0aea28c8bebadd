-- Deploy call_timeout_reaper:cron/call_reaper_purge to pg
-- Schedules the pg_cron job messenger-call-reaper-purge: at minute 17 of every hour it runs
-- messenger.purge_call_reaper_history() in this database, and records it in
-- messenger.call_reaper_cron_jobs. It belongs to the deploying role, not to
-- messenger_call_reaper: deleting history with a chosen cutoff, and other roles' run details,
-- are rights the job role must not hold. Kept where cron/call_reaper kept the reaper's job (its
-- row in call_reaper_cron_jobs): here with cron.schedule, or in cron_database with
-- cron.schedule_in_database, which the deployer may run (cron/call_reaper checked it), under the
-- name rule of cron/call_reaper (docs/design.md, "Scheduling"). Purging from another database
-- reaches the run ledger only: cron.job_run_details is in the cron database.

SELECT :'scheduler' = 'none' AS no_scheduler \gset
\if :no_scheduler
\else
\set job_kind purge
\set job_spec messenger-call-reaper-purge
\set job_command 'SELECT * FROM messenger.purge_call_reaper_history()'
\set schedule_1_5 '17 * * * *'
\set schedule_1_4 '17 * * * *'
\set warn_lag false
\set purge_details true
\ir include/schedule_beside_reaper.psql
\endif
