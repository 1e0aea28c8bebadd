-- Revert call_timeout_reaper:functions/_reap_save_floor from pg
-- Back to the released routine (v1.1.0, v1.2.0), with 13 parameters: this one goes first, then
-- the released deploy script creates it.

BEGIN;

DROP FUNCTION IF EXISTS messenger._reap_save_floor(messenger.call_reaper_phase_run, messenger.call_reaper_lanes, messenger.call_reaper_backlog_outcome);

COMMIT;

\ir ../../deploy/functions/_reap_save_floor@v1.1.0.sql
