-- Verify call_timeout_reaper:types/call_reaper_lanes on pg

BEGIN;

SELECT (NULL::messenger.call_reaper_lanes).backlog_key,
       (NULL::messenger.call_reaper_lanes).floor_stored,
       (NULL::messenger.call_reaper_lanes).vacuums,
       (NULL::messenger.call_reaper_lanes).floor_talking_since;

ROLLBACK;
