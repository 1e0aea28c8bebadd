-- Revert call_timeout_reaper:functions/call_reaper_status from pg
-- The released definition (it drops this one's row type first).

\ir ../../deploy/functions/call_reaper_status@v1.2.0.sql
