-- Deploy call_timeout_reaper:types/call_reaper_cycle to pg
-- A named composite rather than RETURNS TABLE: OUT parameters would become PL/pgSQL variables
-- that clash with the ledger's column names.

BEGIN;

CREATE TYPE messenger.call_reaper_cycle AS (
    run_id               uuid,
    lock_acquired        boolean,
    missed_count         integer,
    failed_count         integer,
    skipped_locked_count integer,
    poisoned_count       integer,
    duration_ms          numeric,
    as_of                timestamptz,
    result               text
);

COMMENT ON TYPE messenger.call_reaper_cycle IS
    'Result of one reaper cycle; result is completed, skipped (lock busy) or failed (rolled back, see call_reaper_runs).';

COMMIT;
