-- Deploy call_timeout_reaper:functions/reap_call_timeouts to pg

BEGIN;

-- messenger.reap_call_timeouts(batch_size, ring_timeout, stale_timeout, as_of)
--
-- One cycle of the call-timeout reaper, atomic: phase 1 (Ringing past ring_timeout -> Missed,
-- one CallMissed outbox row to the caller), then phase 2 (Answered with no progress for
-- stale_timeout -> Failed, one CallEnded row per party). Transitions and their outbox rows
-- commit together with the caller's transaction or not at all.
--
-- Parameters (NULL or omitted = the value in messenger.call_reaper_settings):
--   batch_size    1..10000 calls per phase per cycle (default 200), oldest due first
--   ring_timeout  (0, 1 day]   answer window (default 45 s)
--   stale_timeout (0, 30 days] stale-answered window (default 2 h)
--   as_of         the cycle's "now" (default clock_timestamp()); tests pass it instead of sleeping
-- Bad values raise SQLSTATE 22023 naming the argument, before anything is touched.
--
-- Locking: pg_try_advisory_xact_lock(messenger.call_reaper_lock_key()), the single-runner
-- lock (call_reaper_lock_key says how it shows in pg_locks). Busy: returns at once with
-- lock_acquired = false and zero counts (the skipped run is recorded). The lock is held to the
-- end of the caller's transaction, and idle_in_transaction_session_timeout is set to the
-- configured lock_ttl for the rest of that transaction, so a forgotten open transaction cannot
-- hold the lock longer than the TTL. Rows are claimed with FOR NO KEY UPDATE SKIP LOCKED: the
-- reaper never waits for the product's own commands.
--
-- Idempotent: only active calls are selected and the UPDATE re-checks the status, so a second
-- cycle over closed calls changes nothing; the outbox's unique index refuses a second push.
-- Claims: see _reap_claim; error classes: messenger.call_reaper_error_class. Healthy calls fill the batch before quarantined
-- ones (at most 8 per phase); poison calls (an error about the call's data, e.g. SQLSTATE
-- classes 22, 23, P0001) are bisected out, quarantined with backoff and counted. Transient and
-- systemic errors (class 'transient' of messenger.call_reaper_error_class, or one error hitting
-- every call of a phase's batch) roll back both phases: the run is recorded as failed with its SQLSTATE,
-- counted in errors, nothing is quarantined and the next cycle retries. Cancellation
-- (statement_timeout, pg_cancel_backend) is not caught and rolls back the whole cycle.
-- A cycle opens at most 64 subtransactions (its guard block and every close attempt of both
-- phases; half the attempts are kept for phase 2), so other sessions' snapshots never overflow
-- the subtransaction cache; calls left untried are counted in the ledger's deferred_count, the
-- subtransactions used in its subtransactions column. skipped_locked_count: due, not
-- quarantined calls the claims passed because another transaction held them (not capped).
--
-- SECURITY DEFINER so the job role needs only EXECUTE; it runs as messenger_call_reaper_owner,
-- which may read calls, update their transition columns, insert outbox rows and keep the
-- reaper's own state -- nothing else. search_path is pinned and every name qualified, so a
-- caller's search_path cannot redirect it.
-- The cycle itself is messenger._reap_cycle (the same with the drain loops' extra argument).
CREATE OR REPLACE FUNCTION messenger.reap_call_timeouts(
    batch_size    integer     DEFAULT NULL,
    ring_timeout  interval    DEFAULT NULL,
    stale_timeout interval    DEFAULT NULL,
    as_of         timestamptz DEFAULT NULL)
RETURNS messenger.call_reaper_cycle
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
BEGIN
    RETURN messenger._reap_cycle(reap_call_timeouts.batch_size, reap_call_timeouts.ring_timeout,
                                 reap_call_timeouts.stale_timeout, reap_call_timeouts.as_of, NULL);
END
$$;

COMMENT ON FUNCTION messenger.reap_call_timeouts(integer, interval, interval, timestamptz) IS
$$Runs one call-timeout reaper cycle: Ringing past ring_timeout -> Missed (CallMissed to the caller), then Answered idle past stale_timeout -> Failed (CallEnded to both parties), each with its outbox row in the same transaction. Arguments default (NULL) to messenger.call_reaper_settings; bad ones raise SQLSTATE 22023. Single runner via pg_try_advisory_xact_lock(messenger.call_reaper_lock_key()): busy returns lock_acquired = false at once. Rows claimed FOR NO KEY UPDATE SKIP LOCKED, batch_size per phase: healthy calls first (due in the last polling interval, then oldest due first), at most 8 quarantined calls whose backoff expired. skipped_locked_count = due, not quarantined calls the claims passed because another transaction held them (not capped). Poison calls (SQLSTATE about the call's data) are quarantined and counted; transient or systemic errors (messenger.call_reaper_error_class, or one error hitting every call) fail the cycle, which the next one retries. At most 64 subtransactions per cycle. Usage: SELECT * FROM messenger.reap_call_timeouts();$$;

REVOKE ALL ON FUNCTION messenger.reap_call_timeouts(integer, interval, interval, timestamptz) FROM PUBLIC;
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER FUNCTION messenger.reap_call_timeouts(integer, interval, interval, timestamptz)
    OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;
GRANT EXECUTE ON FUNCTION messenger.reap_call_timeouts(integer, interval, interval, timestamptz)
    TO messenger_call_reaper;

COMMIT;
