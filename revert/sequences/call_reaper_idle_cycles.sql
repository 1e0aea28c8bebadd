-- Revert call_timeout_reaper:sequences/call_reaper_idle_cycles from pg

BEGIN;

DROP SEQUENCE IF EXISTS messenger.call_reaper_idle_cycles;

COMMIT;
