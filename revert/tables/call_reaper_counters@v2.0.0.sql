-- Revert call_timeout_reaper:tables/call_reaper_counters from pg

BEGIN;

DROP TABLE IF EXISTS messenger.call_reaper_counters;

COMMIT;
