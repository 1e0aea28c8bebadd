-- Revert call_timeout_reaper:functions/_reap_save_floor from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger._reap_save_floor(messenger.call_reaper_phase_run, messenger.call_reaper_lanes, messenger.call_reaper_backlog_outcome);

COMMIT;
