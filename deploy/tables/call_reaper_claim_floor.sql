-- Deploy call_timeout_reaper:tables/call_reaper_claim_floor to pg
-- talking_since: the stale-answered phase's floor. ix_call_due's key (started_at) does not say
-- when an Answered call is due (updated_at does), so below such a floor may lie calls still
-- talking. talking_since is at most the earliest updated_at among them, and at most the as_of
-- and the clock of the cycle that stored it (a call answered later below the floor has
-- updated_at at or after that); the floor is trusted only while the cycle's cutoff stays
-- before talking_since minus the fresh window (messenger._reap_floor_trusted). NULL for the
-- Ringing phase, whose key alone says when its calls are due.
-- calls: the pair's calls relation the floor is a position in, part of the key, so each
-- colocated shard pair a Citus worker holds keeps its own floor beside the default pair's
-- (messenger.call_sessions). An oid, never a name: a shard moved away and back is a new
-- relation, and a floor of the old one is never found for it. Its default is the default pair's,
-- for the released routines that run between this change and the ones that name it during an
-- upgrade; by to_regclass of a name, because a regclass constant would make the product's table
-- depend on the reaper's (a DROP of it refused).
-- Existing rows are deleted: a stale-answered row an older release stored has no
-- talking_since, and deleting a floor costs one walk from the start, never a call.

BEGIN;

DELETE FROM messenger.call_reaper_claim_floor;
ALTER TABLE messenger.call_reaper_claim_floor
    ADD COLUMN talking_since timestamptz,
    ADD COLUMN calls regclass NOT NULL DEFAULT pg_catalog.to_regclass('messenger.call_sessions'),
    DROP CONSTRAINT call_reaper_claim_floor_pkey,
    ADD CONSTRAINT call_reaper_claim_floor_pkey PRIMARY KEY (calls, phase);

COMMENT ON TABLE messenger.call_reaper_claim_floor IS
    'Per pair''s calls relation and phase: where the backlog claim starts (below it every call seen was closed or quarantined); checked by every cycle before use. Safe to DELETE (the next cycle walks from the start).';

COMMIT;
