-- Revert call_timeout_reaper:functions/call_reaper_metrics from pg
-- Back to the v1.1.0 routine, whose row has six columns fewer: this one goes first (CREATE OR
-- REPLACE cannot change a row type), then its own deploy script creates it with its owner and
-- grant.

BEGIN;

DROP FUNCTION IF EXISTS messenger.call_reaper_metrics();

COMMIT;

\ir ../../deploy/functions/call_reaper_metrics@v1.1.0.sql
