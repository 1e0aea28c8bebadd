-- Deploy call_timeout_reaper:tables/call_reaper_runs to pg
-- One row per cycle, skipped ones included: the DBA's history ("what did the 10:15 run do?")
-- and the source of the skipped-run count. A skipped cycle only INSERTs here, so a caller that
-- lost the lock never waits on a row the running cycle holds.

BEGIN;

CREATE TABLE messenger.call_reaper_runs (
    run_id               uuid        PRIMARY KEY,
    started_at           timestamptz NOT NULL,
    finished_at          timestamptz NOT NULL,
    as_of                timestamptz NOT NULL,
    result               text        NOT NULL
        CONSTRAINT call_reaper_runs_result_check CHECK (result IN ('completed', 'skipped', 'failed')),
    lock_acquired        boolean     NOT NULL,
    batch_size           integer     NOT NULL,
    ring_timeout         interval    NOT NULL,
    stale_timeout        interval    NOT NULL,
    missed_count         integer     NOT NULL DEFAULT 0,
    failed_count         integer     NOT NULL DEFAULT 0,
    skipped_locked_count integer     NOT NULL DEFAULT 0,
    poisoned_count       integer     NOT NULL DEFAULT 0,
    duration_ms          numeric     NOT NULL,
    -- Subtransactions the cycle opened (its own guard block plus every close attempt; at most
    -- 64, see _reap_pair); NULL for skipped cycles and failed ones (rolled back, uncounted).
    subtransactions      integer,
    -- Claimed calls left untouched because the subtransaction budget ran out: neither closed
    -- nor quarantined, claimable again next cycle.
    deferred_count       integer     NOT NULL DEFAULT 0,
    error_sqlstate       text,
    error_message        text,
    CONSTRAINT call_reaper_runs_skipped_iff_no_lock CHECK ((result = 'skipped') = (NOT lock_acquired))
);

CREATE INDEX ix_call_reaper_runs_started_at ON messenger.call_reaper_runs (started_at);
CREATE INDEX ix_call_reaper_runs_skipped ON messenger.call_reaper_runs (started_at)
    WHERE result = 'skipped';

COMMENT ON TABLE messenger.call_reaper_runs IS
    'Reaper run ledger: one row per cycle (completed, skipped or failed); run_id = outbox correlation_id.';

GRANT SELECT, INSERT, DELETE ON messenger.call_reaper_runs TO messenger_call_reaper_owner;

COMMIT;
