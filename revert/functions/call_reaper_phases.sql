-- Revert call_timeout_reaper:functions/call_reaper_phases from pg
-- Back to the v1.1.0 function, without timeout_setting: this one goes first (CREATE OR REPLACE
-- cannot change a row type), then its own deploy script creates it.

BEGIN;

DROP FUNCTION IF EXISTS messenger.call_reaper_phases();

COMMIT;

\ir ../../deploy/functions/call_reaper_phases@v1.1.0.sql
