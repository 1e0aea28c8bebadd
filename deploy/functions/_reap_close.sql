-- Deploy call_timeout_reaper:functions/_reap_close to pg

BEGIN;

-- Contract: closes one phase's claimed calls (the caller holds their row locks) in due order,
-- isolating poison, inside the caller's transaction.
--   p_ids, p_started, p_keys  the batch (call_id, started_at, due key), laid out as the fresh
--                lane, then p_n_retry quarantined calls, then the backlog lane
--   p_run        the phase's run (messenger.call_reaper_phase_run): phase, run id, as_of, window,
--                subtransaction budget, quarantine backoffs, the pair it closes and pushes on
-- Each lane is one set-based messenger._reap_apply, each attempt in its own subtransaction
-- (retried calls one by one: they failed before, so a set would fail again). An attempt that
-- raises, by messenger.call_reaper_error_class of its SQLSTATE:
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
AS $$
DECLARE
    v_n          constant integer := cardinality(p_ids);
    v_backlog    constant integer := p_n_fresh + p_n_retry + 1;   -- first backlog position
    v_stack_lo   integer[] := '{}'::integer[];
    v_stack_hi   integer[] := '{}'::integer[];
    v_top        integer := 0;
    v_a          integer;
    v_b          integer;
    v_mid        integer;
    v_count      integer;
    v_lags       double precision[];
    v_part       text;
    v_parts      text[] := '{}'::text[];
    v_leaf_states text[] := '{}'::text[];
    v_state      text;
    v_message    text;
BEGIN
    reaped := 0;
    poisoned := 0;
    deferred := 0;
    subtransactions := 0;
    lag_seconds := '{}'::double precision[];
    -- A stack of batch ranges, popped from the top: fresh range, retry calls one by one,
    -- backlog range.
    IF v_n >= v_backlog THEN
        v_top := v_top + 1;
        v_stack_lo[v_top] := v_backlog;
        v_stack_hi[v_top] := v_n;
    END IF;
    FOR i IN REVERSE v_backlog - 1 .. p_n_fresh + 1 LOOP
        v_top := v_top + 1;
        v_stack_lo[v_top] := i;
        v_stack_hi[v_top] := i;
    END LOOP;
    IF p_n_fresh > 0 THEN
        v_top := v_top + 1;
        v_stack_lo[v_top] := 1;
        v_stack_hi[v_top] := p_n_fresh;
    END IF;

    WHILE v_top > 0 LOOP
        v_a := v_stack_lo[v_top];
        v_b := v_stack_hi[v_top];
        v_top := v_top - 1;
        IF subtransactions >= p_run.budget THEN
            deferred := deferred + v_b - v_a + 1;
            IF v_b >= v_backlog AND first_deferred IS NULL THEN
                first_deferred := greatest(v_a, v_backlog);
            END IF;
            CONTINUE;
        END IF;
        subtransactions := subtransactions + 1;
        BEGIN
            SELECT count(*)::integer, coalesce(array_agg(a.lag_seconds), '{}'),
                   string_agg(a.call_id || '/' || a.caller_user_id || '/' || a.callee_user_id, ',')
              INTO v_count, v_lags, v_part
              FROM messenger._reap_apply(p_run.phase, p_ids[v_a:v_b], p_started[v_a:v_b],
                                         ARRAY(SELECT k + p_run.timeout FROM unnest(p_keys[v_a:v_b]) AS k),
                                         p_run.run_id, p_run.as_of, p_run.calls, p_run.outbox) AS a;
            reaped := reaped + v_count;
            lag_seconds := lag_seconds || v_lags;
            IF v_part IS NOT NULL THEN
                v_parts := v_parts || v_part;
            END IF;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT;
            IF messenger.call_reaper_error_class(v_state) = 'transient' THEN
                RAISE;
            END IF;
            IF v_a < v_b THEN
                v_mid := (v_a + v_b) / 2;
                v_top := v_top + 1;
                v_stack_lo[v_top] := v_mid + 1;
                v_stack_hi[v_top] := v_b;
                v_top := v_top + 1;
                v_stack_lo[v_top] := v_a;
                v_stack_hi[v_top] := v_mid;
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
    'Private: close one reaper phase''s claimed calls set-based, bisecting out and quarantining poison within a subtransaction budget.';
REVOKE ALL ON FUNCTION messenger._reap_close(messenger.call_reaper_phase_run, uuid[], timestamptz[], timestamptz[], integer, integer) FROM PUBLIC;
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER FUNCTION messenger._reap_close(messenger.call_reaper_phase_run, uuid[], timestamptz[], timestamptz[], integer, integer)
    OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;

COMMIT;
