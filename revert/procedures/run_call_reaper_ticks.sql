-- Revert call_timeout_reaper:procedures/run_call_reaper_ticks from pg
-- Back to the released body (same signature), which reads pg_cron's version from pg_extension,
-- and without the job role's read of its recorded schedule.

BEGIN;

REVOKE SELECT (kind, schedule) ON messenger.call_reaper_cron_jobs FROM messenger_call_reaper, messenger_call_reaper_operator;

COMMIT;

\ir ../../deploy/procedures/run_call_reaper_ticks@v1.1.0.sql
