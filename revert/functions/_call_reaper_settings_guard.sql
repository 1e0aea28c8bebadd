-- Revert call_timeout_reaper:functions/_call_reaper_settings_guard from pg
-- The released definition (same signature: CREATE OR REPLACE).

\ir ../../deploy/functions/_call_reaper_settings_guard@v1.2.0.sql
