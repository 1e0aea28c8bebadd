-- Revert call_timeout_reaper:tables/call_reaper_lock_holders from pg

BEGIN;

DROP TABLE IF EXISTS messenger.call_reaper_lock_holders;

COMMIT;
