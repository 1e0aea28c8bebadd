-- Revert call_timeout_reaper:cron/call_reaper_warden from pg
-- Back to the released schedule ('* * * * *' on every pg_cron version): its deploy script
-- re-schedules the deployer's job of that name in place.

\ir ../../deploy/cron/call_reaper_warden@v1.0.0.sql
