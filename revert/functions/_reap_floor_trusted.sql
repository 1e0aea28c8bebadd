-- Revert call_timeout_reaper:functions/_reap_floor_trusted from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger._reap_floor_trusted(messenger.call_reaper_phase_run, record, bigint);

COMMIT;
