-- Revert call_timeout_reaper:types/call_reaper_phase_run from pg

BEGIN;

DROP TYPE IF EXISTS messenger.call_reaper_phase_run;

COMMIT;
