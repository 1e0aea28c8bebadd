-- Revert call_timeout_reaper:tables/call_reaper_claim_floor from pg
-- Back to the v1.2.0 table: its floors are rebuilt by the next cycles.

BEGIN;

DELETE FROM messenger.call_reaper_claim_floor;
ALTER TABLE messenger.call_reaper_claim_floor
    DROP COLUMN IF EXISTS talking_since;

COMMIT;
