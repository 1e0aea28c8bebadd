-- Revert call_timeout_reaper:functions/_reap_close from pg
-- Back to the released routine (v1.1.0, v1.2.0), with 12 parameters: this one goes first, then
-- the released deploy script creates it.

BEGIN;

DROP FUNCTION IF EXISTS messenger._reap_close(messenger.call_reaper_phase_run, uuid[], timestamptz[], timestamptz[], integer, integer);

COMMIT;

\ir ../../deploy/functions/_reap_close@v1.1.0.sql
