-- Revert call_timeout_reaper:functions/call_due_key from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger.call_due_key(anyelement, timestamptz, timestamptz);

COMMIT;
