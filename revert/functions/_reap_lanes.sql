-- Revert call_timeout_reaper:functions/_reap_lanes from pg
-- Back to the released routine (v1.1.0, v1.2.0), with 6 parameters and 16 OUT parameters: this
-- one goes first, then the released deploy script creates it.

BEGIN;

DROP FUNCTION IF EXISTS messenger._reap_lanes(messenger.call_reaper_phase_run);

COMMIT;

\ir ../../deploy/functions/_reap_lanes@v1.1.0.sql
