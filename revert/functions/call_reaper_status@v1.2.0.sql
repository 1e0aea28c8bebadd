-- Revert call_timeout_reaper:functions/call_reaper_status from pg
-- Back to the v1.1.0 routine, whose row has five columns fewer: this one goes first (CREATE OR
-- REPLACE cannot change a row type), then its own deploy script creates it.

BEGIN;

DROP FUNCTION IF EXISTS messenger.call_reaper_status();

COMMIT;

\ir ../../deploy/functions/call_reaper_status@v1.1.0.sql
