-- Deploy call_timeout_reaper:functions/_reap_apply to pg

BEGIN;

-- Contract: closes the given calls of one phase and writes their outbox rows in ONE statement,
-- so a transition can never commit without its outbox row or the other way round.
--   p_phase     a phase of messenger.call_reaper_phases(), the rule: which status it closes,
--               to what, and whose outbox rows (the caller's, or each distinct party's)
--   p_call_ids  claimed calls; p_started_at and p_due_at their started_at and due times (same
--               order). started_at is matched too: on a call_sessions partitioned by started_at
--               (sql/partition_call_sessions.sql) that prunes each lookup to one partition.
--   p_run_id    the cycle's run id, written as the outbox correlation_id
--   p_as_of     the cycle's time: ended_at, updated_at and the outbox created_at
--   p_calls, p_outbox  the cycle's pair (messenger._reap_pair): messenger.call_sessions and
--               messenger.realtime_outbox run the static statement; another pair of their shape
--               runs the same text through EXECUTE (messenger._reap_pair_sql): the outbox's id
--               from its own default, or, where its id has none (no identity, no DEFAULT: a
--               Citus shard), from the default outbox's sequence (on a Citus worker that node's
--               range), named in the INSERT's two id slots
-- Returns the calls it closed, in due order, with how late each was closed (p_as_of - due).
-- Locking: the caller must already hold the rows (FOR NO KEY UPDATE). The UPDATE re-checks the
-- phase's status, so a call that is no longer active is left untouched and gets no outbox row.
-- Errors: whatever the UPDATE or the INSERT raises (a CHECK, the outbox's unique index, a
-- trigger), unhandled: the caller runs each attempt in a subtransaction and isolates poison.
-- Why shaped so (docs/design.md): PL/pgSQL around a single
-- RETURN QUERY, not LANGUAGE sql, because PostgreSQL 15 re-plans a non-inlinable SQL
-- function's statement on every call, while PL/pgSQL keeps the plan for the session;
-- enable_sort = on because messenger._reap_pair turns sorting off for the claims and this
-- statement must sort its batch (the outbox rows in due order, see below).
CREATE FUNCTION messenger._reap_apply(
    p_phase      text,
    p_call_ids   uuid[],
    p_started_at timestamptz[],
    p_due_at     timestamptz[],
    p_run_id     uuid,
    p_as_of      timestamptz,
    p_calls      regclass,
    p_outbox     regclass)
RETURNS TABLE (call_id uuid, caller_user_id uuid, callee_user_id uuid, status text, end_reason text,
               lag_seconds double precision)
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
SET enable_sort = on
AS $$
#variable_conflict use_column
DECLARE
    -- Typed as the messenger service's columns (text, varchar or its enum types): a text value
    -- would not cast to an enum column by itself. Filled from the phase rule below.
    v_from        messenger.call_sessions.status%TYPE;
    v_to          messenger.call_sessions.status%TYPE;
    v_end_reason  messenger.call_sessions.end_reason%TYPE;
    v_kind        messenger.realtime_outbox.kind%TYPE;
    v_both        boolean;
    v_target_kind messenger.realtime_outbox.target_kind%TYPE := 'User';
BEGIN
SELECT r.status, r.new_status, r.end_reason, r.outbox_kind, r.recipients = 'both'
  INTO STRICT v_from, v_to, v_end_reason, v_kind, v_both
  FROM messenger.call_reaper_phases() AS r
 WHERE r.phase = p_phase;
-- The default pair: this static statement, whose generic plan the session keeps.
IF p_calls = 'messenger.call_sessions'::regclass AND p_outbox = 'messenger.realtime_outbox'::regclass THEN
RETURN QUERY
-- pair: close
WITH closed AS (
    UPDATE messenger.call_sessions AS c
       SET status           = v_to,
           end_reason       = v_end_reason,
           ended_at         = p_as_of,
           updated_at       = p_as_of,
           duration_seconds = NULL
      FROM unnest(p_call_ids, p_started_at, p_due_at) AS d (call_id, started_at, due_at)
     WHERE c.call_id = d.call_id
       AND c.started_at = d.started_at
       AND c.status = v_from
    RETURNING c.call_id, c.caller_user_id, c.callee_user_id, c.media_type, c.status, c.end_reason, d.due_at
), pushed AS (
    INSERT INTO messenger.realtime_outbox
           (/* id column */kind, target_kind, target_id, reference_id, payload, correlation_id, created_at)
    SELECT /* id value */v_kind,
           v_target_kind,
           'user:' || r.user_id,
           x.call_id,
           jsonb_build_object('callId', x.call_id, 'status', x.status, 'mediaType', x.media_type),
           p_run_id,
           p_as_of
      FROM closed AS x
     -- r.n numbers a call's recipients: 1 = the caller (a CallMissed goes to the caller only),
     -- 2 = the callee. It selects who gets a row and orders the rows: realtime-dispatch
     -- delivers in id order, so the ids follow due order, the caller's row before the callee's.
     CROSS JOIN LATERAL (VALUES (1, x.caller_user_id), (2, x.callee_user_id)) AS r (n, user_id)
     -- Recipients are a set: a call whose caller is its callee gets one CallEnded row, not a
     -- second one the outbox's unique index would refuse (making the call poison forever).
     WHERE r.n = 1 OR (v_both AND x.callee_user_id <> x.caller_user_id)
     ORDER BY x.due_at, x.call_id, r.n
)
SELECT x.call_id, x.caller_user_id, x.callee_user_id, x.status::text, x.end_reason::text,
       extract(epoch FROM p_as_of - x.due_at)::double precision
  FROM closed AS x
 ORDER BY x.due_at, x.call_id;
ELSE
    -- Another pair: the same statement, planned per call; an outbox whose id has no default (a
    -- Citus shard) gets the id's slots filled (messenger._reap_pair_sql).
    RETURN QUERY EXECUTE messenger._reap_pair_sql('messenger._reap_apply', 'close', p_calls, p_outbox,
                                                  'v_to', 'v_end_reason', 'p_as_of', 'p_call_ids', 'p_started_at',
                                                  'p_due_at', 'v_from', 'v_kind', 'v_target_kind', 'p_run_id', 'v_both')
      USING v_to, v_end_reason, p_as_of, p_call_ids, p_started_at, p_due_at, v_from, v_kind, v_target_kind,
            p_run_id, v_both;
END IF;
END
$$;

COMMENT ON FUNCTION messenger._reap_apply(text, uuid[], timestamptz[], timestamptz[], uuid, timestamptz, regclass, regclass) IS
    'Private: one set-based UPDATE ... RETURNING + outbox INSERT for claimed calls of one phase.';
REVOKE ALL ON FUNCTION messenger._reap_apply(text, uuid[], timestamptz[], timestamptz[], uuid, timestamptz, regclass, regclass) FROM PUBLIC;
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER FUNCTION messenger._reap_apply(text, uuid[], timestamptz[], timestamptz[], uuid, timestamptz, regclass, regclass)
    OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;

COMMIT;
