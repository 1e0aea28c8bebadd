-- Verify call_timeout_reaper:tables/call_reaper_footprint on pg

BEGIN;

SELECT kind, target, item, set_by FROM messenger.call_reaper_footprint WHERE false;

ROLLBACK;
