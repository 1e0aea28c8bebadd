-- Revert call_timeout_reaper:procedures/run_call_reaper_ticks from pg
-- Back to the released procedure by its own deploy script, in one transaction with the job
-- role's read of wake_at_deadline (the column itself goes with tables/call_reaper_settings'
-- revert): the script's BEGIN only warns inside it and its COMMIT ends both. A CALL running this
-- tree's definition sees it replaced at its next nap, before it reads the column, and hands the
-- rest of its schedule over to the released one (a nested CALL).

BEGIN;

REVOKE SELECT (wake_at_deadline) ON messenger.call_reaper_settings FROM messenger_call_reaper;

\ir ../../deploy/procedures/run_call_reaper_ticks@v2.0.0.sql
