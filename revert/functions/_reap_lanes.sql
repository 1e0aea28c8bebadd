-- Revert call_timeout_reaper:functions/_reap_lanes from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger._reap_lanes(messenger.call_reaper_phase_run);

COMMIT;
