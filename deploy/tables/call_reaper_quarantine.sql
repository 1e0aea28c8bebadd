-- Deploy call_timeout_reaper:tables/call_reaper_quarantine to pg
-- A poison call (its transition or outbox insert raised) is left active and parked here until
-- next_attempt_at, with a doubling backoff, so it can never crowd healthy calls out of a batch.
-- Deleting a row releases the call to the next cycle. Rows of calls that are no longer active
-- are removed by the reaper.

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

COMMENT ON TABLE messenger.call_reaper_quarantine IS
    'Poison calls the reaper could not close: skipped until next_attempt_at. DELETE a row to retry the call next cycle.';

GRANT SELECT, INSERT, UPDATE, DELETE ON messenger.call_reaper_quarantine TO messenger_call_reaper_owner;

COMMIT;
