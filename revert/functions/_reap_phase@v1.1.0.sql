-- Revert call_timeout_reaper:functions/_reap_phase from pg
-- Back to the v1.0.0 routine, whose signature has no p_after_run: this one goes first.

BEGIN;

DROP FUNCTION IF EXISTS messenger._reap_phase(text, uuid, timestamptz, interval, integer, interval, interval, interval, integer, uuid);

COMMIT;

\ir ../../deploy/functions/_reap_phase@v1.0.0.sql
