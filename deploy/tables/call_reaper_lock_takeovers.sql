-- Deploy call_timeout_reaper:tables/call_reaper_lock_takeovers to pg
-- One row per backend the lock warden ended (messenger._end_stale_call_reaper_lock): the count
-- and history of stale single-runner lock holders. Rows appear only on incidents; a DBA reads
-- it (SELECT * FROM messenger.call_reaper_lock_takeovers ORDER BY ended_at DESC). Ids only: the
-- backend pid, its database role and how long its transaction had run; no query text.

BEGIN;

CREATE TABLE messenger.call_reaper_lock_takeovers (
    id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    ended_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    pid        integer     NOT NULL,
    role_name  name,
    action     text        NOT NULL CONSTRAINT call_reaper_lock_takeovers_action
                                    CHECK (action IN ('cancelled', 'terminated')),
    reason     text        NOT NULL CONSTRAINT call_reaper_lock_takeovers_reason
                                    CHECK (reason IN ('max_run', 'lock_ttl')),
    held_for   interval    NOT NULL,
    signalled  boolean     NOT NULL
);

COMMENT ON TABLE messenger.call_reaper_lock_takeovers IS
    'Backends holding the reaper''s single-runner lock that the lock warden cancelled (scheduled cycle past 30 s) or terminated (transaction older than lock_ttl).';

COMMIT;
