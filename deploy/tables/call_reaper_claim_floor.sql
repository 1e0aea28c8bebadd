-- Deploy call_timeout_reaper:tables/call_reaper_claim_floor to pg
-- talking_since: the stale-answered phase's floor. ix_call_due's key (started_at) does not say
-- when an Answered call is due (updated_at does), so below such a floor may lie calls still
-- talking. talking_since is at most the earliest updated_at among them, and at most the as_of
-- and the clock of the cycle that stored it (a call answered later below the floor has
-- updated_at at or after that); the floor is trusted only while the cycle's cutoff stays
-- before talking_since minus the fresh window (messenger._reap_floor_trusted). NULL for the
-- Ringing phase, whose key alone says when its calls are due. Existing rows are deleted: a
-- stale-answered row an older release stored has no talking_since, and deleting a floor costs
-- one walk from the start, never a call.

BEGIN;

DELETE FROM messenger.call_reaper_claim_floor;
ALTER TABLE messenger.call_reaper_claim_floor
    ADD COLUMN talking_since timestamptz;

COMMIT;
