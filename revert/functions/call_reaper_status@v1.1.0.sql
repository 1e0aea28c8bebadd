-- Revert call_timeout_reaper:functions/call_reaper_status from pg
-- Back to the v1.0.0 routine (same signature): its own deploy script replaces this one.

\ir ../../deploy/functions/call_reaper_status@v1.0.0.sql
