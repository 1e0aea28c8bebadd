-- Deploy call_timeout_reaper:tables/call_sessions to pg
-- text + CHECK rather than enum types: plain string literals work everywhere, and adding a
-- status later is a constraint swap, not an ALTER TYPE that cannot run inside a transaction.

BEGIN;

CREATE TABLE messenger.call_sessions (
    call_id          uuid        PRIMARY KEY,
    caller_user_id   uuid        NOT NULL,
    callee_user_id   uuid        NOT NULL,
    media_type       text        NOT NULL
        CONSTRAINT call_sessions_media_type_check CHECK (media_type IN ('Audio', 'Video')),
    status           text        NOT NULL
        CONSTRAINT call_sessions_status_check
        CHECK (status IN ('Ringing', 'Answered', 'Ended', 'Missed', 'Declined', 'Failed')),
    end_reason       text
        CONSTRAINT call_sessions_end_reason_check
        CHECK (end_reason IN ('Hangup', 'Declined', 'Cancelled', 'Timeout', 'Error')),
    started_at       timestamptz NOT NULL,
    answered_at      timestamptz,
    ended_at         timestamptz,
    updated_at       timestamptz NOT NULL,
    duration_seconds integer
        CONSTRAINT call_sessions_duration_seconds_check CHECK (duration_seconds >= 0),
    -- INV-CALL-3: a call is active exactly while it has neither ended_at nor end_reason.
    CONSTRAINT call_sessions_active_has_no_end CHECK (
        (status IN ('Ringing', 'Answered')) = (ended_at IS NULL)
        AND (status IN ('Ringing', 'Answered')) = (end_reason IS NULL)),
    CONSTRAINT call_sessions_answered_at_check CHECK (
        (status NOT IN ('Answered', 'Ended') OR answered_at IS NOT NULL)
        AND (status <> 'Ringing' OR answered_at IS NULL)),
    CONSTRAINT call_sessions_duration_only_ended CHECK (duration_seconds IS NULL OR status = 'Ended')
);

COMMENT ON TABLE messenger.call_sessions IS
    'One row per call. Active = Ringing or Answered; every other status is terminal (INV-CALL-3).';
COMMENT ON COLUMN messenger.call_sessions.updated_at IS
    'Last signalling progress: the only liveness signal of an answered call (INV-CALL-4).';

-- The reaper's owner may read calls and write only the columns a transition sets.
GRANT SELECT ON messenger.call_sessions TO messenger_call_reaper_owner;
GRANT UPDATE (status, end_reason, ended_at, updated_at, duration_seconds)
    ON messenger.call_sessions TO messenger_call_reaper_owner;

COMMIT;
