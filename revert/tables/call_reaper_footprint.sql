-- Revert call_timeout_reaper:tables/call_reaper_footprint from pg
-- Every change that writes a row here comes later in the plan, so its revert has run and
-- removed its rows by now.

BEGIN;

DROP TABLE IF EXISTS messenger.call_reaper_footprint;

COMMIT;
