-- Revert call_timeout_reaper:procedures/run_call_reaper_warden from pg
-- The released definition (same signature: CREATE OR REPLACE).

\ir ../../deploy/procedures/run_call_reaper_warden@v1.2.0.sql
