-- Revert call_timeout_reaper:functions/_reap_phase from pg
-- Back to the released routine (v1.1.0, v1.2.0), with 10 parameters: this one goes first. The
-- released script starts by dropping the v1.0.0 signature (9 parameters, no IF EXISTS), which
-- is long gone: a stand-in of that signature is created for it to drop, so the released script
-- runs as it was released.

BEGIN;

DROP FUNCTION IF EXISTS messenger._reap_phase(messenger.call_reaper_phase_run);
CREATE FUNCTION messenger._reap_phase(text, uuid, timestamptz, interval, integer, interval, interval, interval, integer)
RETURNS void LANGUAGE sql AS 'SELECT';

COMMIT;

\ir ../../deploy/functions/_reap_phase@v1.1.0.sql
