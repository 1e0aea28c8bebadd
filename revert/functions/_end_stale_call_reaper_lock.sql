-- Revert call_timeout_reaper:functions/_end_stale_call_reaper_lock from pg
-- Back to the v1.1.0 routine (same signature): its own deploy script replaces this one.

\ir ../../deploy/functions/_end_stale_call_reaper_lock@v1.0.0.sql
