-- Revert call_timeout_reaper:functions/_reap_phase from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger._reap_phase(messenger.call_reaper_phase_run);

COMMIT;
