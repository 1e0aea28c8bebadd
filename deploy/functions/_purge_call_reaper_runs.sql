-- Deploy call_timeout_reaper:functions/_purge_call_reaper_runs to pg

BEGIN;

-- Contract: deletes up to p_batch_size run-ledger rows (messenger.call_reaper_runs) that started
-- before p_as_of - retention, oldest first, and returns the cutoff and what it removed.
-- Skipped runs are counted from the ledger (total = runs_skipped_purged + ledger rows), so the
-- purged skipped rows are added to call_reaper_counters.runs_skipped_purged IN THE SAME
-- STATEMENT as the DELETE: no reader can ever see the total drop, the counter stays monotonic.
-- Locking: the counters row is only written by the holder of the reaper's single-runner lock
-- (messenger.call_reaper_lock_key()); when a cycle holds it, nothing is purged (zero counts) and the next
-- purge catches up. The lock is held to the end of the caller's transaction.
-- SECURITY DEFINER so the caller needs no DELETE on the ledger; owned by
-- messenger_call_reaper_owner, which already keeps the reaper's state. EXECUTE is granted to
-- nobody: purge_call_reaper_history, run by the deployer's job messenger-call-reaper-purge or a
-- DBA, is its only caller. The job role cannot reach it: with any as_of it could wipe the ledger.
CREATE OR REPLACE FUNCTION messenger._purge_call_reaper_runs(
    p_as_of          timestamptz,
    p_batch_size     integer,
    OUT cutoff       timestamptz,
    OUT runs_purged  bigint,
    OUT skipped_purged bigint)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_as_of IS NULL OR NOT isfinite(p_as_of) THEN
        RAISE EXCEPTION 'as_of must be a finite time, got %', p_as_of
            USING ERRCODE = '22023', HINT = 'Omit as_of to use the current time.';
    END IF;
    IF p_batch_size IS NULL OR p_batch_size NOT BETWEEN 1 AND 1000000 THEN
        RAISE EXCEPTION 'batch_size must be between 1 and 1000000, got %', p_batch_size
            USING ERRCODE = '22023';
    END IF;
    SELECT p_as_of - s.retention INTO STRICT cutoff FROM messenger.call_reaper_settings AS s;
    runs_purged := 0;
    skipped_purged := 0;
    IF NOT pg_try_advisory_xact_lock(messenger.call_reaper_lock_key()) THEN
        RAISE LOG 'call_reaper event=purge_skipped reason=lock_busy';
        RETURN;
    END IF;

    WITH purged AS (
        DELETE FROM messenger.call_reaper_runs AS r
         WHERE r.run_id IN (SELECT o.run_id
                              FROM messenger.call_reaper_runs AS o
                             WHERE o.started_at < cutoff
                             ORDER BY o.started_at
                             LIMIT p_batch_size)
        RETURNING r.result
    ), n AS (
        SELECT count(*) AS total, count(*) FILTER (WHERE p.result = 'skipped') AS skipped FROM purged AS p
    )
    UPDATE messenger.call_reaper_counters AS k
       SET runs_skipped_purged = k.runs_skipped_purged + n.skipped
      FROM n
    RETURNING n.total, n.skipped INTO runs_purged, skipped_purged;

    RAISE LOG 'call_reaper event=ledger_purged cutoff=% runs=% skipped_folded=%', cutoff, runs_purged, skipped_purged;
END
$$;

COMMENT ON FUNCTION messenger._purge_call_reaper_runs(timestamptz, integer) IS
    'Private: purges run-ledger rows older than the retention, folding skipped ones into call_reaper_counters.runs_skipped_purged in the same statement.';
REVOKE ALL ON FUNCTION messenger._purge_call_reaper_runs(timestamptz, integer) FROM PUBLIC;
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER FUNCTION messenger._purge_call_reaper_runs(timestamptz, integer) OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;

COMMIT;
