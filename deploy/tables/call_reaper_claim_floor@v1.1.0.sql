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
-- v1.1.0: the floor of v1.0.0 (no anchor, trusted for poison_backoff_max) is dropped.

BEGIN;

DELETE FROM messenger.call_reaper_claim_floor;
ALTER TABLE messenger.call_reaper_claim_floor
    ADD COLUMN as_of             timestamptz NOT NULL,
    ADD COLUMN run_id            uuid        NOT NULL,
    ADD COLUMN anchor_started_at timestamptz NOT NULL,
    ADD COLUMN vacuums           bigint      NOT NULL,
    ADD COLUMN swept             boolean     NOT NULL,
    ADD COLUMN passed            bigint      NOT NULL;

COMMENT ON TABLE messenger.call_reaper_claim_floor IS
    'Per phase: where the backlog claim starts (below it every call seen was closed or quarantined); checked by every cycle before use. Safe to DELETE (the next cycle walks from the start).';

COMMIT;
