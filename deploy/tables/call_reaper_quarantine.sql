-- Deploy call_timeout_reaper:tables/call_reaper_quarantine to pg
-- A poison call (its transition or outbox insert raised) is left active and parked here until
-- next_attempt_at, with a doubling backoff. The healthy claim never takes a quarantined call;
-- those whose backoff expired are retried through ix_call_reaper_quarantine_due, a bounded
-- share per cycle (see _reap_claim), so they can never crowd healthy calls out of a batch.
-- Deleting a row releases the call to the next cycle's healthy claim. A row whose call is no
-- longer due in its phase (closed by the product, answered, or progressed) is removed when its
-- backoff expires and the reaper looks at it again: the clean-up reads only those rows, never
-- the whole quarantine.

BEGIN;

CREATE TABLE messenger.call_reaper_quarantine (
    call_id         uuid        PRIMARY KEY,
    phase           text        NOT NULL
        CONSTRAINT call_reaper_quarantine_phase_check CHECK (phase IN ('ring_timeout', 'stale_answered')),
    attempts        integer     NOT NULL CONSTRAINT call_reaper_quarantine_attempts_check CHECK (attempts >= 1),
    first_failed_at timestamptz NOT NULL,
    last_failed_at  timestamptz NOT NULL,
    next_attempt_at timestamptz NOT NULL,
    last_sqlstate   text        NOT NULL,
    last_message    text        NOT NULL,
    last_run_id     uuid        NOT NULL
);

CREATE INDEX ix_call_reaper_quarantine_due ON messenger.call_reaper_quarantine (phase, next_attempt_at, call_id);

COMMENT ON TABLE messenger.call_reaper_quarantine IS
    'Poison calls the reaper could not close: skipped until next_attempt_at. DELETE a row to retry the call next cycle.';

GRANT SELECT, INSERT, UPDATE, DELETE ON messenger.call_reaper_quarantine TO messenger_call_reaper_owner;

COMMIT;
