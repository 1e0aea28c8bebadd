-- Revert call_timeout_reaper:tables/call_reaper_claim_floor from pg
-- Back to the v1.2.0 table (keyed by phase): its floors are rebuilt by the next cycles.

BEGIN;

DELETE FROM messenger.call_reaper_claim_floor;
ALTER TABLE messenger.call_reaper_claim_floor
    DROP CONSTRAINT call_reaper_claim_floor_pkey,
    DROP COLUMN IF EXISTS calls,
    DROP COLUMN IF EXISTS talking_since,
    ADD CONSTRAINT call_reaper_claim_floor_pkey PRIMARY KEY (phase);

COMMENT ON TABLE messenger.call_reaper_claim_floor IS
    'Per phase: where the backlog claim starts (below it every call seen was closed or quarantined); checked by every cycle before use. Safe to DELETE (the next cycle walks from the start).';

COMMIT;
