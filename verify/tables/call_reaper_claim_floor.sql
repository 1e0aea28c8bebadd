-- Verify call_timeout_reaper:tables/call_reaper_claim_floor on pg

BEGIN;

SELECT phase, due_key, call_id, reset_at, as_of, run_id, anchor_started_at, vacuums, swept, passed, talking_since, calls
  FROM messenger.call_reaper_claim_floor WHERE false;

ROLLBACK;
