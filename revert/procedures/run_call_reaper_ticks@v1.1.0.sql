-- Revert call_timeout_reaper:procedures/run_call_reaper_ticks from pg
-- Back to the v1.0.0 routine (same signature): its own deploy script replaces this one.

\ir ../../deploy/procedures/run_call_reaper_ticks@v1.0.0.sql
