-- Verify call_timeout_reaper:functions/call_reaper_metrics on pg

BEGIN;

-- Exactly one row, or the exporter has nothing to publish.
SELECT 1 / (count(*) = 1)::integer FROM messenger.call_reaper_metrics();

ROLLBACK;
