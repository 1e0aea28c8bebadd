-- Revert call_timeout_reaper:functions/_reap_pair from pg
-- Back to the released function by its own deploy script. Its result has no calls_missed or
-- calls_failed, so the function is dropped first in the same transaction: the script's BEGIN
-- only warns inside it and its COMMIT ends both; it gives the operator's EXECUTE back itself.

BEGIN;

DROP FUNCTION messenger._reap_pair(regclass, regclass, uuid, timestamptz, jsonb, integer, uuid);

\ir ../../deploy/functions/_reap_pair@v2.0.0.sql
