-- Revert call_timeout_reaper:procedures/run_call_reaper_ticks from pg
-- Back to the released procedure, by its own deploy script; the job role's read of
-- wake_at_deadline goes first (the column itself goes with tables/call_reaper_settings' revert).

BEGIN;

REVOKE SELECT (wake_at_deadline) ON messenger.call_reaper_settings FROM messenger_call_reaper;

COMMIT;

\ir ../../deploy/procedures/run_call_reaper_ticks@v2.0.0.sql
