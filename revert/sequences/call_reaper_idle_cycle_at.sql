-- Revert call_timeout_reaper:sequences/call_reaper_idle_cycle_at from pg

BEGIN;

DROP SEQUENCE IF EXISTS messenger.call_reaper_idle_cycle_at;

COMMIT;
