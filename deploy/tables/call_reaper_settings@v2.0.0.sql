-- Deploy call_timeout_reaper:tables/call_reaper_settings to pg
-- CallTimeoutReaperOptions as one row a DBA edits with UPDATE. The singleton key keeps it one
-- row; the validation and the refusal to delete it are triggers/call_reaper_settings_guard
-- (which checks the row inserted here when it is deployed). The owner role reads it, because
-- the SECURITY DEFINER reaper runs as that role.

BEGIN;

CREATE TABLE messenger.call_reaper_settings (
    singleton          boolean  PRIMARY KEY DEFAULT true CONSTRAINT call_reaper_settings_singleton CHECK (singleton),
    batch_size         integer  NOT NULL DEFAULT 200,
    ring_timeout       interval NOT NULL DEFAULT '45 seconds',
    stale_timeout      interval NOT NULL DEFAULT '2 hours',
    polling_interval   interval NOT NULL DEFAULT '15 seconds',
    lock_ttl           interval NOT NULL DEFAULT '1 minute',
    poison_backoff     interval NOT NULL DEFAULT '1 minute',
    poison_backoff_max interval NOT NULL DEFAULT '1 hour',
    retention          interval NOT NULL DEFAULT '168 hours',
    paused             boolean  NOT NULL DEFAULT false,
    allow_future_as_of boolean  NOT NULL DEFAULT false
);

COMMENT ON TABLE messenger.call_reaper_settings IS
    'Reaper options (one row). Change with UPDATE; bad values raise SQLSTATE 22023 and are not stored.';
COMMENT ON COLUMN messenger.call_reaper_settings.batch_size IS 'Max calls per phase per cycle (1..10000).';
COMMENT ON COLUMN messenger.call_reaper_settings.ring_timeout IS 'Answer window: Ringing longer than this becomes Missed.';
COMMENT ON COLUMN messenger.call_reaper_settings.stale_timeout IS 'Answered with no progress longer than this becomes Failed.';
COMMENT ON COLUMN messenger.call_reaper_settings.polling_interval IS 'How often the scheduled job runs a cycle.';
COMMENT ON COLUMN messenger.call_reaper_settings.lock_ttl IS 'Longest a transaction holding the single-runner lock may sit idle.';
COMMENT ON COLUMN messenger.call_reaper_settings.poison_backoff IS 'First retry delay of a quarantined (poison) call; doubles per failure.';
COMMENT ON COLUMN messenger.call_reaper_settings.poison_backoff_max IS 'Longest retry delay of a quarantined call.';
COMMENT ON COLUMN messenger.call_reaper_settings.retention IS 'How long run history is kept.';
COMMENT ON COLUMN messenger.call_reaper_settings.paused IS
    'True: the scheduled job runs no cycle (messenger.pause_call_reaper / resume_call_reaper).';
COMMENT ON COLUMN messenger.call_reaper_settings.allow_future_as_of IS
    'Test clusters only: true lets as_of lie in the future (tests pass it instead of sleeping). Never in production: a future as_of closes live calls.';

INSERT INTO messenger.call_reaper_settings DEFAULT VALUES;

GRANT SELECT ON messenger.call_reaper_settings TO messenger_call_reaper_owner;

COMMIT;
