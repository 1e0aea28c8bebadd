-- Revert call_timeout_reaper:functions/_end_stale_call_reaper_lock from pg
-- Back to the released function by its own deploy script (CREATE OR REPLACE, same signature,
-- its grants unchanged).

\ir ../../deploy/functions/_end_stale_call_reaper_lock@v2.0.0.sql
