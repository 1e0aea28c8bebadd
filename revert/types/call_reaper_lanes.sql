-- Revert call_timeout_reaper:types/call_reaper_lanes from pg

BEGIN;

DROP TYPE IF EXISTS messenger.call_reaper_lanes;

COMMIT;
