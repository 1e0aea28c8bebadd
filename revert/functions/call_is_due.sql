-- Revert call_timeout_reaper:functions/call_is_due from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger.call_is_due(anyelement, timestamptz, timestamptz, timestamptz);

COMMIT;
