-- Deploy call_timeout_reaper:functions/_reap_deadline to pg

BEGIN;

-- messenger._reap_deadline(after_as_of timestamptz) RETURNS messenger.call_reaper_cycle
--
-- Contract: the deadline wake's closure (messenger.run_call_reaper_ticks between its ticks): the
-- Ringing calls whose deadline (started_at + ring_timeout) fell in (after_as_of, now], at most
-- batch_size, oldest first, claimed FOR NO KEY UPDATE SKIP LOCKED, set Missed and given their
-- CallMissed outbox rows (correlation_id: the run id) in ONE statement, under the single-runner
-- lock. Then the counters (a completed run, its duration, the calls and their reap_lag) and one
-- log record, event=deadline_closed, with the run id and every call closed; when it closed
-- nothing (answered meanwhile, or held), nothing is counted or written. No ledger row, no
-- claim floor, no stale-Answered phase, no poison isolation: the polling ticks do those.
-- result: 'completed', or 'fallback' when it closed nothing and the caller must run the full
-- cycle (messenger._reap_cycle): the reaper is paused (for a caller who is not an operator, as in
-- messenger._reap_cycle), the lock is busy, or the statement failed
-- (a poison call, a product trigger; the full cycle isolates it and writes the ledger row).
-- Calls before after_as_of are not its business (the last cycle's as_of: it closed them, or left
-- them to the ticks: row-locked, quarantined, a full batch). as_of is always the clock, so the
-- job role, which may EXECUTE it, can never close a call before its deadline.
-- Generic plans: custom ones were planned again at every closure (a third of its CPU); the
-- generic claim is the same range of ix_call_due.
-- Why it exists, and what it costs against a full cycle: docs/design.md, "The deadline closure".
CREATE FUNCTION messenger._reap_deadline(after_as_of timestamptz)
RETURNS messenger.call_reaper_cycle
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_as_of   constant timestamptz := clock_timestamp();
    v_out     messenger.call_reaper_cycle := ROW(NULL::uuid, false, 0, 0, 0, 0, NULL::numeric, v_as_of, 'fallback');
    v_s       messenger.call_reaper_settings;
    v_to      messenger.call_sessions.status%TYPE;
    v_reason  messenger.call_sessions.end_reason%TYPE;
    v_kind    messenger.realtime_outbox.kind%TYPE;
    v_user    constant messenger.realtime_outbox.target_kind%TYPE := 'User';
    v_lags    double precision[];
    v_calls   text;
    v_seconds double precision;
BEGIN
    SELECT * INTO STRICT v_s FROM messenger.call_reaper_settings;
    -- Paused, only an operator closes calls, as in messenger._reap_cycle (the caller: SET ROLE,
    -- else the login; current_user is the owner here).
    IF v_s.paused AND NOT pg_catalog.pg_has_role(coalesce(nullif(pg_catalog.current_setting('role'), 'none'), session_user::text),
                                                 'messenger_call_reaper_operator', 'USAGE') THEN
        RETURN v_out;
    ELSIF NOT pg_catalog.pg_try_advisory_xact_lock(messenger.call_reaper_lock_key()) THEN
        RETURN v_out;
    END IF;
    SELECT r.new_status, r.end_reason, r.outbox_kind INTO STRICT v_to, v_reason, v_kind
      FROM messenger.call_reaper_phases() AS r WHERE r.phase = 'ring_timeout';
    -- UUIDv7, as a cycle's run id (messenger._reap_cycle): time-ordered like the ledger's keys.
    v_out.run_id := encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
                        PLACING substring(int8send((extract(epoch FROM v_as_of) * 1000)::bigint) FROM 3)
                        FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid;
    BEGIN
        -- 'Ringing' a literal, so the planner matches ix_call_due's partial predicate.
        WITH due AS (
            SELECT c.call_id, c.started_at
              FROM messenger.call_sessions AS c
             WHERE c.status = 'Ringing'
               AND c.started_at > after_as_of - v_s.ring_timeout
               AND c.started_at <= v_as_of - v_s.ring_timeout
             ORDER BY c.started_at
             LIMIT v_s.batch_size
               FOR NO KEY UPDATE SKIP LOCKED
        ), closed AS (
            UPDATE messenger.call_sessions AS c
               SET status = v_to, end_reason = v_reason, ended_at = v_as_of, updated_at = v_as_of,
                   duration_seconds = NULL
              FROM due AS d
             WHERE c.call_id = d.call_id AND c.started_at = d.started_at AND c.status = 'Ringing'
            RETURNING c.call_id, c.caller_user_id, c.callee_user_id, c.media_type, c.status,
                      c.started_at + v_s.ring_timeout AS due_at
        ), pushed AS (
            INSERT INTO messenger.realtime_outbox
                   (kind, target_kind, target_id, reference_id, payload, correlation_id, created_at)
            SELECT v_kind, v_user, 'user:' || x.caller_user_id, x.call_id,
                   jsonb_build_object('callId', x.call_id, 'status', x.status, 'mediaType', x.media_type),
                   v_out.run_id, v_as_of
              FROM closed AS x
             ORDER BY x.due_at, x.call_id
        )
        SELECT count(*)::integer,
               coalesce(array_agg(extract(epoch FROM v_as_of - x.due_at)::double precision), '{}'),
               string_agg(x.call_id || '/' || x.caller_user_id || '/' || x.callee_user_id, ',' ORDER BY x.due_at, x.call_id)
          INTO v_out.missed_count, v_lags, v_calls
          FROM closed AS x;
    EXCEPTION WHEN OTHERS THEN
        -- Rolled back whole; the full cycle finds the same calls and isolates the one at fault.
        RAISE LOG 'call_reaper event=deadline_fallback run_id=% sqlstate=% message=%',
            v_out.run_id, SQLSTATE, to_json(SQLERRM);
        RETURN v_out;
    END;
    v_out.lock_acquired := true;
    v_out.result := 'completed';
    v_seconds := extract(epoch FROM clock_timestamp() - v_as_of)::double precision;
    v_out.duration_ms := round((v_seconds * 1000)::numeric, 3);
    -- The call was answered meanwhile, or is held: nothing to count, and nothing written.
    IF v_out.missed_count = 0 THEN
        RETURN v_out;
    END IF;
    UPDATE messenger.call_reaper_counters AS k
       SET runs_completed = k.runs_completed + 1,
           items_missed   = k.items_missed + v_out.missed_count,
           cycle_duration_buckets = ARRAY(
               SELECT b.n + (v_seconds <= b.le)::integer
                 FROM unnest(k.cycle_duration_buckets, k.cycle_duration_bounds) WITH ORDINALITY AS b (n, le, i)
                ORDER BY b.i),
           cycle_duration_count = k.cycle_duration_count + 1,
           cycle_duration_sum   = k.cycle_duration_sum + v_seconds,
           reap_lag_buckets = ARRAY(
               SELECT b.n + (SELECT count(*) FROM unnest(v_lags) AS l (s) WHERE l.s <= b.le)
                 FROM unnest(k.reap_lag_buckets, k.reap_lag_bounds) WITH ORDINALITY AS b (n, le, i)
                ORDER BY b.i),
           reap_lag_count = k.reap_lag_count + v_out.missed_count,
           reap_lag_sum   = k.reap_lag_sum + coalesce((SELECT sum(l.s) FROM unnest(v_lags) AS l (s)), 0),
           last_run_at     = clock_timestamp(),
           last_success_at = clock_timestamp()
     WHERE k.singleton;
    RAISE LOG 'call_reaper event=deadline_closed run_id=% as_of=% missed=% duration_ms=% calls=%',
        v_out.run_id, to_json(v_as_of) #>> '{}', v_out.missed_count, v_out.duration_ms, coalesce(v_calls, '');
    RETURN v_out;
END
$$;

COMMENT ON FUNCTION messenger._reap_deadline(timestamptz) IS
    'Private: the deadline wake''s lean closure: the Ringing calls due since after_as_of closed Missed with their CallMissed rows in one statement, counted, logged, no ledger row; result fallback when the full cycle must run instead.';
REVOKE ALL ON FUNCTION messenger._reap_deadline(timestamptz) FROM PUBLIC;
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER FUNCTION messenger._reap_deadline(timestamptz) OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;
-- The job role's CALL runs it, and an operator's CALL of run_call_reaper_ticks() too.
GRANT EXECUTE ON FUNCTION messenger._reap_deadline(timestamptz) TO messenger_call_reaper, messenger_call_reaper_operator;

COMMIT;
