-- Revert call_timeout_reaper:functions/call_reaper_metrics from pg
-- Back to the released function by its own deploy script; its row type has no idle_cycles, which
-- CREATE OR REPLACE cannot take away, so the function is dropped first in the same transaction
-- (the script's BEGIN only warns inside it, its COMMIT ends both, and it grants the monitor role
-- EXECUTE again); the operator's EXECUTE, which grants/call_reaper_operator gave, after.

BEGIN;

DROP FUNCTION messenger.call_reaper_metrics();

\ir ../../deploy/functions/call_reaper_metrics@v2.0.0.sql

BEGIN;

GRANT EXECUTE ON FUNCTION messenger.call_reaper_metrics() TO messenger_call_reaper_operator;

COMMIT;
