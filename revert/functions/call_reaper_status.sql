-- Revert call_timeout_reaper:functions/call_reaper_status from pg
-- Back to the released function (its deploy script): this version's result has three more
-- columns, so it is dropped first.

BEGIN;

DROP FUNCTION IF EXISTS messenger.call_reaper_status();

COMMIT;

\ir ../../deploy/functions/call_reaper_status@v2.0.0.sql
