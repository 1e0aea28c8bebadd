-- Verify call_timeout_reaper:tables/call_reaper_claim_floor on pg

BEGIN;

SELECT phase, due_key, call_id, reset_at FROM messenger.call_reaper_claim_floor WHERE false;

ROLLBACK;
