-- Revert call_timeout_reaper:procedures/run_call_reaper_warden from pg
-- Back to the released routine (same signature, the minute loop on every pg_cron version): its own
-- deploy script replaces this one.

\ir ../../deploy/procedures/run_call_reaper_warden@v1.0.0.sql
