-- Deploy call_timeout_reaper:functions/_reap_close to pg

BEGIN;

-- Contract: closes one phase's claimed calls (the caller holds their row locks) in due order,
-- isolating poison, inside the caller's transaction.
--   p_ids, p_started, p_keys  the batch (call_id, started_at, due key), laid out as the fresh
--                lane, then p_n_retry quarantined calls, then the backlog lane
--   p_run        the phase's run (messenger.call_reaper_phase_run): phase, run id, as_of, window,
--                subtransaction budget, quarantine backoffs, the pair it closes and pushes on
-- An attempt closes a range of the batch and writes its outbox rows in ONE statement (below),
-- so a transition can never commit without its outbox row or the other way round. Each lane is
-- one set-based attempt, each attempt in its own subtransaction (retried calls one by one: they
-- failed before, so a set would fail again). An attempt that raises (a CHECK, the outbox's
-- unique index, a product trigger), by messenger.call_reaper_error_class of its SQLSTATE:
--   * 'transient': re-raised, the cycle rolls back whole (the error says nothing of a call);
--   * otherwise a set is bisected, its halves left on the stack in due order, and a single
--     call is poison: left active, counted, quarantined (messenger._reap_quarantine_call).
--     Isolating p poison calls among n costs O(p log n) attempts.
--   * when nothing closed and every healthy call (at least 2) failed alone with one SQLSTATE
--     of class 'other', the error hits every call: it is re-raised and the cycle fails.
-- When the budget is spent, the calls not yet tried are left (not closed, not quarantined;
-- their row locks go with the transaction) and counted in deferred; first_deferred is the
-- batch position of the first backlog call left so (NULL: none), where the floor must stop.
-- calls lists every closed call as call_id/caller/callee for the cycle's one log record.
-- query_canceled is not caught by WHEN OTHERS: cancellation rolls back the cycle.
-- The statement: the phase's rule (messenger.call_reaper_phases(): which status it closes, to
-- what, and whose outbox rows, the caller's or each distinct party's); the calls matched by
-- (call_id, started_at), which on a call_sessions partitioned by started_at
-- (sql/partition_call_sessions.sql) prunes each lookup to one partition; ended_at, updated_at
-- and the outbox created_at are p_run.as_of, the outbox correlation_id its run id. The caller
-- holds the rows (FOR NO KEY UPDATE); the UPDATE re-checks the phase's status, so a call no
-- longer active is left untouched and gets no outbox row. On the default pair
-- (messenger.call_sessions, messenger.realtime_outbox) the static statement; another pair of
-- their shape runs the same text through EXECUTE (messenger._reap_pair_sql): the outbox's id
-- from its own default, or, where its id has none (no identity, no DEFAULT: a Citus shard),
-- from the default outbox's sequence (on a Citus worker that node's range), named in the
-- INSERT's two id slots. enable_sort = on because messenger._reap_pair turns sorting off for
-- the claims and this statement must sort its batch (the outbox rows in due order).
-- In the statement, r.n numbers a call's recipients: 1 = the caller (a CallMissed goes to the
-- caller only), 2 = the callee. It selects who gets a row and orders the rows: realtime-dispatch
-- delivers in id order, so the ids follow due order, the caller's row before the callee's.
-- Recipients are a set: a call whose caller is its callee gets one CallEnded row, not a second
-- one the outbox's unique index would refuse (making the call poison forever). The lags feed a
-- histogram (any order); the log lists the calls in due order. The phase rule's values are
-- typed as the messenger service's columns (text, varchar or its enum types): a text value
-- would not cast to an enum column by itself.
CREATE FUNCTION messenger._reap_close(
    p_run          messenger.call_reaper_phase_run,
    p_ids          uuid[],
    p_started      timestamptz[],
    p_keys         timestamptz[],
    p_n_fresh      integer,
    p_n_retry      integer,
    OUT reaped     integer,
    OUT poisoned   integer,
    OUT deferred   integer,
    OUT subtransactions integer,
    OUT first_deferred integer,
    OUT lag_seconds double precision[],
    OUT calls      text)
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
SET enable_sort = on
AS $$
DECLARE
    v_from        messenger.call_sessions.status%TYPE;
    v_to          messenger.call_sessions.status%TYPE;
    v_end_reason  messenger.call_sessions.end_reason%TYPE;
    v_kind        messenger.realtime_outbox.kind%TYPE;
    v_both        boolean;
    v_target_kind messenger.realtime_outbox.target_kind%TYPE := 'User';
    v_ids         uuid[];
    v_started     timestamptz[];
    v_due         timestamptz[];
    v_n          constant integer := cardinality(p_ids);
    v_backlog    constant integer := p_n_fresh + p_n_retry + 1;   -- first backlog position
    -- Batch ranges left to try, popped from the end: backlog, each retried call, fresh on top.
    v_stack      int4range[] := ARRAY[int4range(v_backlog, v_n + 1)];
    v_a          integer;
    v_b          integer;
    v_count      integer;
    v_lags       double precision[];
    v_part       text;
    v_parts      text[] := '{}'::text[];
    v_leaf_states text[] := '{}'::text[];
    v_state      text;
    v_message    text;
BEGIN
    SELECT r.status, r.new_status, r.end_reason, r.outbox_kind, r.recipients = 'both',
           0, 0, 0, 0, '{}'::double precision[]
      INTO STRICT v_from, v_to, v_end_reason, v_kind, v_both,
           reaped, poisoned, deferred, subtransactions, lag_seconds
      FROM messenger.call_reaper_phases() AS r
     WHERE r.phase = p_run.phase;
    FOR i IN REVERSE v_backlog - 1 .. p_n_fresh + 1 LOOP v_stack := v_stack || int4range(i, i + 1); END LOOP;
    v_stack := v_stack || int4range(1, p_n_fresh + 1);
    WHILE cardinality(v_stack) > 0 LOOP
        v_a := lower(v_stack[cardinality(v_stack)]);
        v_b := upper(v_stack[cardinality(v_stack)]) - 1;
        v_stack := trim_array(v_stack, 1);
        CONTINUE WHEN v_a IS NULL;   -- an empty lane
        IF subtransactions >= p_run.budget THEN
            deferred := deferred + v_b - v_a + 1;
            first_deferred := coalesce(first_deferred, CASE WHEN v_b >= v_backlog THEN greatest(v_a, v_backlog) END);
            CONTINUE;
        END IF;
        subtransactions := subtransactions + 1;
        v_ids := p_ids[v_a:v_b];
        v_started := p_started[v_a:v_b];
        v_due := ARRAY(SELECT k + p_run.timeout FROM unnest(p_keys[v_a:v_b]) AS k);
        BEGIN
            IF p_run.calls = 'messenger.call_sessions'::regclass AND p_run.outbox = 'messenger.realtime_outbox'::regclass THEN
            -- pair: close
            WITH closed AS (
                UPDATE messenger.call_sessions AS c
                   SET status           = v_to,
                       end_reason       = v_end_reason,
                       ended_at         = p_run.as_of,
                       updated_at       = p_run.as_of,
                       duration_seconds = NULL
                  FROM unnest(v_ids, v_started, v_due) AS d (call_id, started_at, due_at)
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
                       p_run.run_id,
                       p_run.as_of
                  FROM closed AS x
                 CROSS JOIN LATERAL (VALUES (1, x.caller_user_id), (2, x.callee_user_id)) AS r (n, user_id)
                 WHERE r.n = 1 OR (v_both AND x.callee_user_id <> x.caller_user_id)
                 ORDER BY x.due_at, x.call_id, r.n
            )
            SELECT count(*)::integer,
                   coalesce(array_agg(extract(epoch FROM p_run.as_of - x.due_at)::double precision), '{}'),
                   string_agg(x.call_id || '/' || x.caller_user_id || '/' || x.callee_user_id, ',' ORDER BY x.due_at, x.call_id)
              INTO v_count, v_lags, v_part
              FROM closed AS x;
            ELSE
                EXECUTE messenger._reap_pair_sql('messenger._reap_close', 'close', p_run.calls, p_run.outbox,
                                                 'v_to', 'v_end_reason', 'p_run.as_of', 'v_ids', 'v_started', 'v_due',
                                                 'v_from', 'v_kind', 'v_target_kind', 'p_run.run_id', 'v_both')
                   INTO v_count, v_lags, v_part
                  USING v_to, v_end_reason, p_run.as_of, v_ids, v_started, v_due, v_from, v_kind, v_target_kind,
                        p_run.run_id, v_both;
            END IF;
            reaped := reaped + v_count;
            lag_seconds := lag_seconds || v_lags;
            v_parts := v_parts || v_part;   -- NULL when it closed none; array_to_string skips it
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT;
            IF messenger.call_reaper_error_class(v_state) = 'transient' THEN
                RAISE;
            END IF;
            IF v_a < v_b THEN
                v_stack := v_stack || int4range((v_a + v_b) / 2 + 1, v_b + 1) || int4range(v_a, (v_a + v_b) / 2 + 1);
            ELSE
                poisoned := poisoned + 1;
                IF v_a NOT BETWEEN p_n_fresh + 1 AND v_backlog - 1 THEN
                    v_leaf_states := v_leaf_states || v_state;
                END IF;
                PERFORM messenger._reap_quarantine_call(p_ids[v_a], p_run.phase, v_state, v_message, p_run.run_id,
                                                        p_run.as_of, p_run.backoff, p_run.backoff_max);
            END IF;
        END;
    END LOOP;
    calls := array_to_string(v_parts, ',');
    IF reaped = 0 AND deferred = 0 AND cardinality(v_leaf_states) >= 2
       AND cardinality(v_leaf_states) = v_n - p_n_retry
       AND v_leaf_states <@ ARRAY[v_leaf_states[1]]
       AND messenger.call_reaper_error_class(v_leaf_states[1]) = 'other' THEN
        RAISE EXCEPTION 'every call of the % batch (%) failed with SQLSTATE %: % (not poison: the error is not about one call)',
            p_run.phase, v_n - p_n_retry, v_leaf_states[1], v_message
            USING ERRCODE = v_leaf_states[1];
    END IF;
END
$$;

COMMENT ON FUNCTION messenger._reap_close(messenger.call_reaper_phase_run, uuid[], timestamptz[], timestamptz[], integer, integer) IS
    'Private: close one reaper phase''s claimed calls and write their outbox rows, one statement per attempt, bisecting out and quarantining poison within a subtransaction budget.';
REVOKE ALL ON FUNCTION messenger._reap_close(messenger.call_reaper_phase_run, uuid[], timestamptz[], timestamptz[], integer, integer) FROM PUBLIC;
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER FUNCTION messenger._reap_close(messenger.call_reaper_phase_run, uuid[], timestamptz[], timestamptz[], integer, integer)
    OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;

COMMIT;
