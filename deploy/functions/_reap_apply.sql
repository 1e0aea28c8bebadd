-- Deploy call_timeout_reaper:functions/_reap_apply to pg

BEGIN;

-- Contract: closes the given calls of one phase and writes their outbox rows in ONE statement,
-- so a transition can never commit without its outbox row or the other way round. The caller
-- must already hold the rows (FOR NO KEY UPDATE); the status guard in the UPDATE keeps a call
-- that is no longer active untouched anyway. Returns the calls it closed, in due order, with
-- how late each was closed. It raises whatever the UPDATE or INSERT raises (the caller isolates
-- poison calls). PL/pgSQL around a single RETURN QUERY, not LANGUAGE sql: PostgreSQL 15
-- re-plans a (non-inlinable) SQL function's statement on every call, which cost more than a
-- millisecond per batch, and several on a partitioned call_sessions; PL/pgSQL keeps the plan
-- for the session. enable_sort = on: its caller, _reap_phase, turns sorting off for its claims,
-- and this statement must sort its small batch (planned without, one call took 150 ms).
--   p_phase     'ring_timeout' (Ringing -> Missed, CallMissed to the caller) or
--               'stale_answered' (Answered -> Failed, CallEnded to each distinct party)
--   p_call_ids  claimed calls; p_started_at and p_due_at their started_at and due times (same
--               order). started_at is matched too: on a call_sessions partitioned by started_at
--               (sql/partition_call_sessions.sql) that prunes each lookup to one partition
--               instead of probing every month's index.
--   p_run_id    the cycle's run id, written as the outbox correlation_id
--   p_as_of     the cycle's time: ended_at, updated_at and the outbox created_at
CREATE OR REPLACE FUNCTION messenger._reap_apply(
    p_phase      text,
    p_call_ids   uuid[],
    p_started_at timestamptz[],
    p_due_at     timestamptz[],
    p_run_id     uuid,
    p_as_of      timestamptz)
RETURNS TABLE (call_id uuid, caller_user_id uuid, callee_user_id uuid, status text, end_reason text,
               lag_seconds double precision)
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET enable_sort = on
AS $$
#variable_conflict use_column
BEGIN
RETURN QUERY
WITH closed AS (
    UPDATE messenger.call_sessions AS c
       SET status           = CASE p_phase WHEN 'ring_timeout' THEN 'Missed' ELSE 'Failed' END,
           end_reason       = CASE p_phase WHEN 'ring_timeout' THEN 'Timeout' ELSE 'Error' END,
           ended_at         = p_as_of,
           updated_at       = p_as_of,
           duration_seconds = NULL
      FROM unnest(p_call_ids, p_started_at, p_due_at) AS d (call_id, started_at, due_at)
     WHERE c.call_id = d.call_id
       AND c.started_at = d.started_at
       AND c.status = CASE p_phase WHEN 'ring_timeout' THEN 'Ringing' ELSE 'Answered' END
    RETURNING c.call_id, c.caller_user_id, c.callee_user_id, c.media_type, c.status, c.end_reason, d.due_at
), pushed AS (
    INSERT INTO messenger.realtime_outbox
           (kind, target_kind, target_id, reference_id, payload, correlation_id, created_at)
    SELECT CASE p_phase WHEN 'ring_timeout' THEN 'CallMissed' ELSE 'CallEnded' END,
           'User',
           'user:' || r.user_id,
           x.call_id,
           jsonb_build_object('callId', x.call_id, 'status', x.status, 'mediaType', x.media_type),
           p_run_id,
           p_as_of
      FROM closed AS x
     CROSS JOIN LATERAL (VALUES (1, x.caller_user_id), (2, x.callee_user_id)) AS r (n, user_id)
     -- Recipients are a set: a call whose caller is its callee gets one CallEnded row, not a
     -- second one the outbox's unique index would refuse (making the call poison forever).
     WHERE r.n = 1 OR (p_phase = 'stale_answered' AND x.callee_user_id <> x.caller_user_id)
     ORDER BY x.due_at, x.call_id, r.n
)
SELECT x.call_id, x.caller_user_id, x.callee_user_id, x.status, x.end_reason,
       extract(epoch FROM p_as_of - x.due_at)::double precision
  FROM closed AS x
 ORDER BY x.due_at, x.call_id;
END
$$;

COMMENT ON FUNCTION messenger._reap_apply(text, uuid[], timestamptz[], timestamptz[], uuid, timestamptz) IS
    'Private: one set-based UPDATE ... RETURNING + outbox INSERT for claimed calls of one phase.';
REVOKE ALL ON FUNCTION messenger._reap_apply(text, uuid[], timestamptz[], timestamptz[], uuid, timestamptz) FROM PUBLIC;
ALTER FUNCTION messenger._reap_apply(text, uuid[], timestamptz[], timestamptz[], uuid, timestamptz)
    OWNER TO messenger_call_reaper_owner;

COMMIT;
