-- Deploy call_timeout_reaper:tables/call_reaper_claim_floor to pg
-- Where each phase's backlog claim starts in ix_call_due: below it, every call the reaper saw
-- was closed or quarantined. It lets an idle cycle step past a poison flood (quarantined calls
-- are the oldest due ones) and past the dead entries a drain leaves until VACUUM, instead of
-- walking them every cycle. It is a hint, never trusted blindly: every cycle checks it before
-- use (messenger._reap_lanes) and ignores and replaces it when
--   * as_of is not later than the as_of of the cycle that set it (run_id, as_of) -- unless
--     this is the next cycle of the drain or catch-up loop that set it;
--   * as_of is poison_backoff_max or more past reset_at (when it started);
--   * the call it stops at (call_id, anchor_started_at) no longer exists: TRUNCATE, DELETE and
--     restores of call_sessions;
--   * call_sessions was vacuumed since (vacuums: its VACUUM count then): the dead entries are
--     gone, and the next cycle sets it again over the quarantined calls.
-- A floor is kept only where it saves real work: while a drain's full lanes move it, after a
-- drain that closed at least 1,000 calls from it (passed), and over at least 16 quarantined
-- calls; smaller backlogs and a few poison calls leave none, as if it did not exist.
-- A floor a full backlog lane moved is swept once (swept = false until then): the first cycle
-- whose backlog lane comes up short, the end of a drain, walks from the start up to it, so a
-- call committed below it during the drain is closed then. A call that gets a due key below a
-- swept floor without being claimed (written long after the started_at or updated_at it
-- carries) waits for one of the checks above. Deleting the rows costs
-- one walk from the start, never a call. docs/design.md, "Claiming", says why.
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
-- relation, and a floor of the old one is never found for it. No default: a regclass constant
-- would make the product's table depend on the reaper's (a DROP of it refused).

BEGIN;

CREATE TABLE messenger.call_reaper_claim_floor (
    phase             text        NOT NULL
        CONSTRAINT call_reaper_claim_floor_phase_check CHECK (phase IN ('ring_timeout', 'stale_answered')),
    due_key           timestamptz NOT NULL,
    call_id           uuid        NOT NULL,
    reset_at          timestamptz NOT NULL,
    as_of             timestamptz NOT NULL,
    run_id            uuid        NOT NULL,
    anchor_started_at timestamptz NOT NULL,
    vacuums           bigint      NOT NULL,
    swept             boolean     NOT NULL,
    passed            bigint      NOT NULL,
    talking_since     timestamptz,
    calls             regclass    NOT NULL,
    CONSTRAINT call_reaper_claim_floor_pkey PRIMARY KEY (calls, phase)
);

COMMENT ON TABLE messenger.call_reaper_claim_floor IS
    'Per pair''s calls relation and phase: where the backlog claim starts (below it every call seen was closed or quarantined); checked by every cycle before use. Safe to DELETE (the next cycle walks from the start).';

GRANT SELECT, INSERT, UPDATE, DELETE ON messenger.call_reaper_claim_floor TO messenger_call_reaper_owner;

COMMIT;
