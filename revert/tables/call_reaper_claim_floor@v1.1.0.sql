-- Revert call_timeout_reaper:tables/call_reaper_claim_floor from pg
-- Back to the v1.0.0 table: its floors are rebuilt by the next cycles.

BEGIN;

DELETE FROM messenger.call_reaper_claim_floor;
ALTER TABLE messenger.call_reaper_claim_floor
    DROP COLUMN as_of,
    DROP COLUMN run_id,
    DROP COLUMN anchor_started_at,
    DROP COLUMN vacuums,
    DROP COLUMN swept,
    DROP COLUMN passed;

COMMENT ON TABLE messenger.call_reaper_claim_floor IS
    'Per phase: every due call below (due_key, call_id) in ix_call_due is quarantined; the backlog claim starts there. Safe to DELETE (the next cycle walks from the start).';

COMMIT;
