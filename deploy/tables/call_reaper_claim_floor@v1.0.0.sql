-- Deploy call_timeout_reaper:tables/call_reaper_claim_floor to pg
-- Where each phase's backlog claim starts in ix_call_due, so a cycle does not walk the
-- quarantined calls, which are the oldest due ones, every time (an index entry and a quarantine
-- probe each; with many calls in backoff that walk would be the whole cost of an idle cycle).
-- Invariant: every call of the phase's status below (due_key, call_id) in ix_call_due is in
-- messenger.call_reaper_quarantine. _reap_phase moves the floor to the first healthy or
-- row-locked call (or, with none, to the last quarantined one), so only over quarantined
-- entries, and starts afresh when it is older than poison_backoff_max. A trigger resets a phase's floor
-- when a quarantine row of a call below it goes while the call is still active in that phase
-- (a DBA releasing a call, TRUNCATE), so a released call is claimed by the next cycle. A call
-- that gets a due key below the floor without being quarantined (a product write with an old
-- started_at or updated_at, or one committed long after it set them) is claimed at the next
-- reset, at most poison_backoff_max later. No row, or deleting the rows, only costs one walk.
-- The reset on release is triggers/call_reaper_quarantine_released.

BEGIN;

CREATE TABLE messenger.call_reaper_claim_floor (
    phase    text        PRIMARY KEY
        CONSTRAINT call_reaper_claim_floor_phase_check CHECK (phase IN ('ring_timeout', 'stale_answered')),
    due_key  timestamptz NOT NULL,
    call_id  uuid        NOT NULL,
    reset_at timestamptz NOT NULL
);

COMMENT ON TABLE messenger.call_reaper_claim_floor IS
    'Per phase: every due call below (due_key, call_id) in ix_call_due is quarantined; the backlog claim starts there. Safe to DELETE (the next cycle walks from the start).';

GRANT SELECT, INSERT, UPDATE, DELETE ON messenger.call_reaper_claim_floor TO messenger_call_reaper_owner;

COMMIT;
