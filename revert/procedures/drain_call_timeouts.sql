-- Revert call_timeout_reaper:procedures/drain_call_timeouts from pg
-- Back to the released procedure by its own deploy script. That script CREATEs it (no OR
-- REPLACE), so the procedure is dropped first in the same transaction: the script's BEGIN only
-- warns inside it and its COMMIT ends both. The drop takes the operator's EXECUTE with it, which
-- grants/call_reaper_operator gave; it is given back after.

BEGIN;

DROP PROCEDURE messenger.drain_call_timeouts(integer, integer, interval, interval, timestamptz, real, integer, bigint, bigint);

\ir ../../deploy/procedures/drain_call_timeouts@v2.0.0.sql

BEGIN;

GRANT EXECUTE ON PROCEDURE messenger.drain_call_timeouts(integer, integer, interval, interval, timestamptz, real, integer, bigint, bigint)
    TO messenger_call_reaper_operator;

COMMIT;
