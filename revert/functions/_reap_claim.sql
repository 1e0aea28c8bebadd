-- Revert call_timeout_reaper:functions/_reap_claim from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger._reap_claim(messenger.call_reaper_phase_run, messenger.call_reaper_lanes);

COMMIT;
