-- Deploy call_timeout_reaper:functions/_reap_phase to pg

BEGIN;

-- Contract: runs one phase of one cycle inside the caller's transaction (the caller holds the
-- single-runner lock).
--   p_phase        'ring_timeout' (Ringing calls) or 'stale_answered' (Answered calls)
--   p_as_of, p_timeout  a call is due when messenger.call_due_key(...) <= p_as_of - p_timeout
--   p_batch_size   most calls this phase claims
--   p_fresh        width of the fresh lane (the polling interval)
--   p_backoff, p_backoff_max  quarantine backoff: p_backoff, doubling per failure, capped
--   p_budget       most subtransactions this phase may open
--
-- Claim (every call FOR NO KEY UPDATE SKIP LOCKED: a call held by answer-call/end-call is
-- skipped, never waited for; NO KEY UPDATE because FOR UPDATE conflicts with the KEY SHARE locks
-- that inserts of child rows take through a foreign key), in three lanes sharing one batch:
--   retry    quarantined calls of this phase whose backoff expired, oldest next_attempt_at
--            first: at most ceil(batch_size / 10), never more than 8 (the bounded share of
--            known-poison calls). Rows it finds whose call is no longer due in this phase
--            (closed, answered, progressed) are deleted: that is the quarantine's clean-up,
--            and it reads only expired rows it looks at anyway.
--   fresh    healthy calls (not in the quarantine) that became due within the last p_fresh,
--            oldest first: the ones the SLO (due + polling interval) still covers.
--   backlog  healthy calls due earlier, oldest first, in the batch's remaining room, starting
--            at the phase's floor (messenger.call_reaper_claim_floor: no due call below it is
--            claimable but quarantined ones). This function moves the floor
--              - over quarantined calls (while the phase has quarantine rows), so no cycle
--                walks them again;
--              - after a full backlog lane, up to the first of: the first call that lane
--                passed (skipped_locked), the first of its calls left deferred, its last
--                claimed call. So the next cycle of a drain starts where this one stopped
--                instead of walking the index entries of every call the drain closed (dead
--                until VACUUM; at 100k calls that walk was a third of a drain's buffers).
--            A floor is ignored once p_as_of leaves [reset_at, reset_at + p_backoff_max), and
--            a phase without quarantine rows keeps one only while its backlog lane fills: the
--            first cycle whose backlog lane comes up short deletes it. A call that gets a due
--            key below the floor without being claimed (a write committed long after the
--            started_at or updated_at it carries) is therefore claimed when the drain ends,
--            at most p_backoff_max later.
-- Healthy lanes are one statement over ix_call_due (a range scan between two due keys that
-- stops at the cutoff or the limit; pgTAP claim_*_plan and idle_cycle_reads_no_live_rows hold
-- it to that). skipped_locked = healthy due calls inside the ranges the claims walked (up to
-- the last claimed call of a full lane, to the lane's end otherwise) that the claim passed
-- because another transaction held them (or changed them after the cycle's snapshot); not
-- capped.
--
-- Close: each lane is one set-based messenger._reap_apply (fresh first, then each retry call
-- alone, then the backlog), each attempt in its own subtransaction. An attempt that raises:
--   * SQLSTATE class 08, 40, 42, 53, 55, 57, 58, F0 or XX (connection, deadlock/serialization,
--     privileges and undefined objects, resources, lock not available, operator intervention,
--     system and internal errors) says nothing about the call: it is re-raised and the cycle
--     rolls back whole (the caller records it as failed);
--   * otherwise a set is bisected and a single call is poison: left active, counted in
--     poisoned, logged (event=call_poisoned, CallId and SQLSTATE, never DETAIL) and quarantined
--     with a doubling backoff. Isolating p poison calls among n costs O(p log n) attempts.
--   * if this phase closed nothing and every healthy call of its batch (at least 2) failed
--     alone with one SQLSTATE outside classes 22, 23 and P0001 (which are about a call's
--     data), the error hits every call: it is re-raised and the cycle fails.
-- When p_budget attempts are spent, the calls not yet tried are left as they are (neither
-- closed nor quarantined; their row locks go with the transaction) and counted in deferred.
-- query_canceled is not caught by WHEN OTHERS: cancellation rolls back the cycle.
--
-- Log: one event=batch_selected record and, when it closed calls, one event=calls_reaped record
-- listing every closed call as call_id/caller/callee (status and end_reason are the phase's),
-- so the server log grows by O(1) records per cycle (each record also gets CONTEXT and
-- STATEMENT lines), not one per call.
-- Bad input: an unknown p_phase raises SQLSTATE 22023 before anything is read. The other
-- arguments are the caller's, already checked (messenger._check_reaper_options).
--
-- Why shaped so (the measurements behind each point: docs/benchmarks.md, "Design notes"):
--   * a lane's claim and its skipped-locked count are one statement, so both read one snapshot;
--     only when a full backlog lane passed calls does a second statement look for the first
--     one, where the floor must stop (a later snapshot can only find it or an earlier call);
--   * the anti-join against the quarantine runs only while the quarantine has a row at all (two
--     index probes per phase, which see what phase 1 just quarantined): in the common case the
--     claims read call_sessions alone;
--   * plan_cache_mode = force_generic_plan: planned once per session, not once per cycle (on a
--     partitioned call_sessions, once per partition per cycle); the generic plans are the same
--     range scans and prune partitions at executor start-up;
--   * enable_sort = off: a claim walks ix_call_due in due order and never sorts a lane;
--   * jit = off: the cost a disabled sort is charged would otherwise make the executor
--     JIT-compile statements that run in microseconds.
CREATE OR REPLACE FUNCTION messenger._reap_phase(
    p_phase              text,
    p_run_id             uuid,
    p_as_of              timestamptz,
    p_timeout            interval,
    p_batch_size         integer,
    p_fresh              interval,
    p_backoff            interval,
    p_backoff_max        interval,
    p_budget             integer,
    OUT reaped           integer,
    OUT skipped_locked   integer,
    OUT poisoned         integer,
    OUT deferred         integer,
    OUT subtransactions  integer,
    OUT lag_seconds      double precision[])
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET enable_sort = off
SET jit = off
AS $$
DECLARE
    c_retry_share_max constant integer := 8;
    -- Lanes are bounded below by a row comparison on (due key, call_id), the keyset form: it is
    -- an index condition of ix_call_due, and it keeps the generic plan walking the index rather
    -- than sorting the lane (see docs/benchmarks.md, "Design notes").
    -- Sentinel: paired with the all-ones uuid, a due key k bounds a range to the keys after k
    -- from below ((key, id) >= (k, c_uuid_max)) and to the keys up to k inclusive from above
    -- ((key, id) <= (k, c_uuid_max)), whatever the call ids. So the backlog lane (up to
    -- cutoff - p_fresh) and the fresh lane (after it) never share a call, ('-infinity',
    -- c_uuid_max) is "no floor", and a count up to (lane end, c_uuid_max) covers the whole lane.
    -- (A call whose id is itself the all-ones uuid, which gen_random_uuid never returns, would
    -- sit on both sides of a bound: at worst claimed by both lanes and closed once.)
    c_uuid_max   constant uuid := 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid;
    v_status     constant messenger.call_sessions.status%TYPE := CASE p_phase WHEN 'ring_timeout' THEN 'Ringing'
                                               WHEN 'stale_answered' THEN 'Answered' END;
    v_other      constant text := CASE p_phase WHEN 'ring_timeout' THEN 'stale_answered' ELSE 'ring_timeout' END;
    v_cutoff     constant timestamptz := p_as_of - p_timeout;
    v_share      constant integer := least(c_retry_share_max, (p_batch_size + 9) / 10);
    v_retry_ids  uuid[];
    v_retry_st   timestamptz[];
    v_retry_key  timestamptz[];
    v_lane_ids   uuid[];
    v_lane_st    timestamptz[];
    v_lane_key   timestamptz[];
    v_lane_lo    timestamptz;
    v_lane_lo_id uuid;
    v_next_retry timestamptz;
    v_next_other timestamptz;
    v_quarantined boolean;
    v_floor_key  timestamptz;
    v_floor_id   uuid;
    v_floor_at   timestamptz;
    v_floor_moved boolean := false;
    v_floor_row  boolean;
    v_backlog_start integer := 2147483647;
    v_backlog_full boolean;  -- NULL: the backlog lane did not run
    v_first_deferred integer;
    v_upto_key   timestamptz;
    v_upto_id    uuid;
    v_backlog_empty boolean := false;
    v_new_key    timestamptz;
    v_new_id     uuid;
    v_lane_hi    timestamptz;
    v_limit      integer;
    v_skipped    integer;
    v_ids        uuid[] := '{}'::uuid[];
    v_started    timestamptz[] := '{}'::timestamptz[];
    v_keys       timestamptz[] := '{}'::timestamptz[];
    v_n_fresh    integer := 0;
    v_n_retry    integer := 0;
    v_n          integer;
    v_stack_lo   integer[] := '{}'::integer[];
    v_stack_hi   integer[] := '{}'::integer[];
    v_top        integer := 0;
    v_a          integer;
    v_b          integer;
    v_mid        integer;
    v_count      integer;
    v_lags       double precision[];
    v_part       text;
    v_calls      text[] := '{}'::text[];
    v_leaf_states text[] := '{}'::text[];
    v_state      text;
    v_message    text;
BEGIN
    reaped := 0;
    skipped_locked := 0;
    poisoned := 0;
    deferred := 0;
    subtransactions := 0;
    lag_seconds := '{}'::double precision[];
    IF v_status IS NULL THEN
        RAISE EXCEPTION 'unknown reaper phase %', p_phase USING ERRCODE = '22023';
    END IF;

    -- Retry lane; its DELETE of rows whose call is no longer due reads the same snapshot. The
    -- probes first keep an idle cycle from touching calls: each min() reads one entry of
    -- ix_call_reaper_quarantine_due (an EXISTS was planned as a scan of the whole quarantine,
    -- dead pages included). Only the reaper writes the quarantine, under the single-runner
    -- lock, so v_quarantined cannot go stale before this phase's claims. The same statement
    -- reads the phase's floor (one row of a one-page table).
    SELECT (SELECT min(q.next_attempt_at) FROM messenger.call_reaper_quarantine AS q WHERE q.phase = p_phase),
           (SELECT min(q.next_attempt_at) FROM messenger.call_reaper_quarantine AS q WHERE q.phase = v_other),
           f.due_key, f.call_id, f.reset_at
      INTO v_next_retry, v_next_other, v_floor_key, v_floor_id, v_floor_at
      FROM (SELECT) AS one
      LEFT JOIN messenger.call_reaper_claim_floor AS f ON f.phase = p_phase;
    v_floor_row := v_floor_at IS NOT NULL;
    v_quarantined := v_next_retry IS NOT NULL OR v_next_other IS NOT NULL;
    IF v_next_retry <= p_as_of THEN
    WITH expired AS (
        SELECT q.call_id
          FROM messenger.call_reaper_quarantine AS q
         WHERE q.phase = p_phase
           AND q.next_attempt_at <= p_as_of
         ORDER BY q.next_attempt_at, q.call_id
         LIMIT v_share
    ), gone AS (
        DELETE FROM messenger.call_reaper_quarantine AS q
         USING expired AS e
         WHERE q.call_id = e.call_id
           AND NOT EXISTS (SELECT FROM messenger.call_sessions AS s
                            WHERE s.call_id = e.call_id
                              AND s.status = v_status
                              AND messenger.call_due_key(s.status, s.started_at, s.updated_at) <= v_cutoff)
    ), claimed AS MATERIALIZED (
        SELECT s.call_id, s.started_at, messenger.call_due_key(s.status, s.started_at, s.updated_at) AS due_key
          FROM messenger.call_sessions AS s
         WHERE s.call_id = ANY (ARRAY(SELECT e.call_id FROM expired AS e))  -- primary-key probes
           AND s.status = v_status
           AND messenger.call_due_key(s.status, s.started_at, s.updated_at) <= v_cutoff
           FOR NO KEY UPDATE OF s SKIP LOCKED
    )
    SELECT coalesce(array_agg(c.call_id ORDER BY c.due_key, c.call_id), '{}'),
           coalesce(array_agg(c.started_at ORDER BY c.due_key, c.call_id), '{}'),
           coalesce(array_agg(c.due_key ORDER BY c.due_key, c.call_id), '{}')
      INTO v_retry_ids, v_retry_st, v_retry_key
      FROM claimed AS c;
    ELSE
        v_retry_ids := '{}';
        v_retry_st := '{}';
        v_retry_key := '{}';
    END IF;
    v_n_retry := cardinality(v_retry_ids);

    -- The backlog lane starts at the phase's floor, moved here over the quarantined entries
    -- that follow it. Idle, this reads the few entries from the floor to the backlog's end, not
    -- the quarantine. With no quarantine row of this phase there is nothing to pass over; the
    -- floor is then one a drain left (moved after the apply below), or none.
    IF v_floor_at IS NULL OR p_as_of < v_floor_at OR p_as_of >= v_floor_at + p_backoff_max THEN
        v_floor_key := '-infinity';
        v_floor_id := c_uuid_max;
        v_floor_at := p_as_of;
        v_floor_moved := v_floor_row;
    END IF;
    IF v_next_retry IS NOT NULL THEN
        -- The first healthy (or row-locked) call at or above the floor becomes the floor; with none
        -- up to the backlog's end, the last (quarantined) call before that end does. Never the end
        -- itself: a call committed late with an older due key than the end would then be passed
        -- over until the next reset.
        SELECT messenger.call_due_key(s.status, s.started_at, s.updated_at), s.call_id
          INTO v_new_key, v_new_id
          FROM messenger.call_sessions AS s
         WHERE s.status = v_status
           AND (messenger.call_due_key(s.status, s.started_at, s.updated_at), s.call_id) >= (v_floor_key, v_floor_id)
           AND messenger.call_due_key(s.status, s.started_at, s.updated_at) <= v_cutoff - p_fresh
           AND NOT EXISTS (SELECT FROM messenger.call_reaper_quarantine AS q WHERE q.call_id = s.call_id)
         ORDER BY messenger.call_due_key(s.status, s.started_at, s.updated_at), s.call_id
         LIMIT 1;
        IF v_new_key IS NULL THEN
            -- Nothing but quarantined calls up to the backlog's end: the backlog lane would
            -- claim nothing, and is not run.
            v_backlog_empty := true;
            SELECT messenger.call_due_key(s.status, s.started_at, s.updated_at), s.call_id
              INTO v_new_key, v_new_id
              FROM messenger.call_sessions AS s
             WHERE s.status = v_status
               AND (messenger.call_due_key(s.status, s.started_at, s.updated_at), s.call_id) >= (v_floor_key, v_floor_id)
               AND messenger.call_due_key(s.status, s.started_at, s.updated_at) <= v_cutoff - p_fresh
             ORDER BY messenger.call_due_key(s.status, s.started_at, s.updated_at) DESC, s.call_id DESC
             LIMIT 1;
        END IF;
        IF v_new_key IS NOT NULL AND (v_new_key, v_new_id) <> (v_floor_key, v_floor_id) THEN
            v_floor_key := v_new_key;
            v_floor_id := v_new_id;
            v_floor_moved := true;
        END IF;
    END IF;

    -- Healthy lanes: fresh (lane 1), then backlog (lane 2), in the room the retry lane left.
    -- One statement per lane, so the claim and the count of what it skipped read one snapshot.
    -- The count walks the claim's index range in the claim's order (ORDER BY, enable_sort off):
    -- unordered, the planner estimates a lane of parameters small and, on a partitioned
    -- call_sessions, scans partitions by bitmap or sequentially instead; the claim itself
    -- likewise must never sort a lane.
    FOR v_lane IN 1 .. 2 LOOP
        v_limit := p_batch_size - v_n_retry - v_n_fresh;
        EXIT WHEN v_limit <= 0 OR (v_lane = 2 AND v_backlog_empty);
        IF v_lane = 1 THEN
            v_lane_lo := v_cutoff - p_fresh;
            v_lane_lo_id := c_uuid_max;
            v_lane_hi := v_cutoff;
        ELSE
            v_lane_lo := v_floor_key;
            v_lane_lo_id := v_floor_id;
            v_lane_hi := v_cutoff - p_fresh;
        END IF;
        WITH claimed AS MATERIALIZED (
            SELECT s.call_id, s.started_at, messenger.call_due_key(s.status, s.started_at, s.updated_at) AS due_key
              FROM messenger.call_sessions AS s
             WHERE s.status = v_status
               AND (messenger.call_due_key(s.status, s.started_at, s.updated_at), s.call_id) >= (v_lane_lo, v_lane_lo_id)
               AND messenger.call_due_key(s.status, s.started_at, s.updated_at) <= v_lane_hi
               AND (NOT v_quarantined OR NOT EXISTS (SELECT FROM messenger.call_reaper_quarantine AS q WHERE q.call_id = s.call_id))
             ORDER BY messenger.call_due_key(s.status, s.started_at, s.updated_at), s.call_id
             LIMIT v_limit
               FOR NO KEY UPDATE OF s SKIP LOCKED
        ), batch AS (
            SELECT coalesce(array_agg(c.call_id ORDER BY c.due_key, c.call_id), '{}') AS ids,
                   coalesce(array_agg(c.started_at ORDER BY c.due_key, c.call_id), '{}') AS started,
                   coalesce(array_agg(c.due_key ORDER BY c.due_key, c.call_id), '{}') AS keys
              FROM claimed AS c
        ), bound AS (
            SELECT b.*,
                   CASE WHEN cardinality(b.ids) < v_limit THEN v_lane_hi ELSE b.keys[v_limit] END AS upto_key,
                   CASE WHEN cardinality(b.ids) < v_limit THEN c_uuid_max
                        ELSE b.ids[v_limit] END AS upto_id
              FROM batch AS b
        )
        SELECT b.ids, b.started, b.keys, b.upto_key, b.upto_id,
               (SELECT count(*)::integer
                  FROM (SELECT
                          FROM messenger.call_sessions AS s
                         WHERE s.status = v_status
                           AND (messenger.call_due_key(s.status, s.started_at, s.updated_at), s.call_id) >= (v_lane_lo, v_lane_lo_id)
                           AND messenger.call_due_key(s.status, s.started_at, s.updated_at) <= b.upto_key
                           AND (messenger.call_due_key(s.status, s.started_at, s.updated_at), s.call_id) <= (b.upto_key, b.upto_id)
                           AND (NOT v_quarantined OR NOT EXISTS (SELECT FROM messenger.call_reaper_quarantine AS q WHERE q.call_id = s.call_id))
                         ORDER BY messenger.call_due_key(s.status, s.started_at, s.updated_at), s.call_id) AS x)
                 - cardinality(b.ids)
          INTO v_lane_ids, v_lane_st, v_lane_key, v_upto_key, v_upto_id, v_skipped
          FROM bound AS b;
        v_skipped := greatest(v_skipped, 0);
        skipped_locked := skipped_locked + v_skipped;
        IF v_lane = 2 THEN
            v_backlog_start := v_n_fresh + v_n_retry + 1;
            v_backlog_full := cardinality(v_lane_ids) = v_limit;
            IF v_backlog_full AND v_skipped > 0 THEN
                -- The floor must stop at the first call the lane passed. Read in a later
                -- snapshot, which can only find it, or a call committed since, earlier.
                SELECT messenger.call_due_key(s.status, s.started_at, s.updated_at), s.call_id
                  INTO v_new_key, v_new_id
                  FROM messenger.call_sessions AS s
                 WHERE s.status = v_status
                   AND (messenger.call_due_key(s.status, s.started_at, s.updated_at), s.call_id) >= (v_lane_lo, v_lane_lo_id)
                   AND (messenger.call_due_key(s.status, s.started_at, s.updated_at), s.call_id) <= (v_upto_key, v_upto_id)
                   AND s.call_id <> ALL (v_lane_ids)
                   AND (NOT v_quarantined OR NOT EXISTS (SELECT FROM messenger.call_reaper_quarantine AS q WHERE q.call_id = s.call_id))
                 ORDER BY messenger.call_due_key(s.status, s.started_at, s.updated_at), s.call_id
                 LIMIT 1;
                IF FOUND THEN
                    v_upto_key := v_new_key;
                    v_upto_id := v_new_id;
                END IF;
            END IF;
        END IF;
        IF v_lane = 1 THEN
            v_n_fresh := cardinality(v_lane_ids);
            -- Layout: fresh, then retry, then backlog; each lane a contiguous range.
            v_ids := v_lane_ids || v_retry_ids;
            v_started := v_lane_st || v_retry_st;
            v_keys := v_lane_key || v_retry_key;
        ELSE
            v_ids := v_ids || v_lane_ids;
            v_started := v_started || v_lane_st;
            v_keys := v_keys || v_lane_key;
        END IF;
    END LOOP;
    IF cardinality(v_ids) = 0 AND v_n_retry > 0 THEN
        -- Both healthy lanes were skipped (no room): the batch is the retry lane alone.
        v_ids := v_retry_ids;
        v_started := v_retry_st;
        v_keys := v_retry_key;
    END IF;
    v_n := cardinality(v_ids);

    RAISE LOG 'call_reaper event=batch_selected run_id=% phase=% count=% retried=% skipped_locked=%',
        p_run_id, p_phase, v_n, v_n_retry, skipped_locked;

    -- A stack of index ranges, popped from the top: fresh range, retry calls one by one (they
    -- failed before, so a set would fail again), backlog range; a failing range is replaced by
    -- its two halves, left on top, so calls are tried in due order.
    IF v_n > v_n_fresh + v_n_retry THEN
        v_top := v_top + 1;
        v_stack_lo[v_top] := v_n_fresh + v_n_retry + 1;
        v_stack_hi[v_top] := v_n;
    END IF;
    FOR i IN REVERSE v_n_fresh + v_n_retry .. v_n_fresh + 1 LOOP
        v_top := v_top + 1;
        v_stack_lo[v_top] := i;
        v_stack_hi[v_top] := i;
    END LOOP;
    IF v_n_fresh > 0 THEN
        v_top := v_top + 1;
        v_stack_lo[v_top] := 1;
        v_stack_hi[v_top] := v_n_fresh;
    END IF;

    WHILE v_top > 0 LOOP
        v_a := v_stack_lo[v_top];
        v_b := v_stack_hi[v_top];
        v_top := v_top - 1;
        IF subtransactions >= p_budget THEN
            deferred := deferred + v_b - v_a + 1;
            IF v_b >= v_backlog_start AND v_first_deferred IS NULL THEN
                v_first_deferred := greatest(v_a, v_backlog_start);
            END IF;
            CONTINUE;
        END IF;
        subtransactions := subtransactions + 1;
        BEGIN
            SELECT count(*)::integer, coalesce(array_agg(a.lag_seconds), '{}'),
                   string_agg(a.call_id || '/' || a.caller_user_id || '/' || a.callee_user_id, ',')
              INTO v_count, v_lags, v_part
              FROM messenger._reap_apply(p_phase, v_ids[v_a:v_b], v_started[v_a:v_b],
                                         ARRAY(SELECT k + p_timeout FROM unnest(v_keys[v_a:v_b]) AS k),
                                         p_run_id, p_as_of) AS a;
            reaped := reaped + v_count;
            lag_seconds := lag_seconds || v_lags;
            IF v_part IS NOT NULL THEN
                v_calls := v_calls || v_part;
            END IF;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT;
            IF left(v_state, 2) IN ('08', '40', '42', '53', '55', '57', '58', 'F0', 'XX') THEN
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
                IF v_a NOT BETWEEN v_n_fresh + 1 AND v_n_fresh + v_n_retry THEN
                    v_leaf_states := v_leaf_states || v_state;
                END IF;
                INSERT INTO messenger.call_reaper_quarantine AS q
                       (call_id, phase, attempts, first_failed_at, last_failed_at, next_attempt_at,
                        last_sqlstate, last_message, last_run_id)
                VALUES (v_ids[v_a], p_phase, 1, p_as_of, p_as_of, p_as_of + p_backoff,
                        v_state, v_message, p_run_id)
                ON CONFLICT ON CONSTRAINT call_reaper_quarantine_pkey DO UPDATE
                   SET phase           = EXCLUDED.phase,
                       attempts        = q.attempts + 1,
                       last_failed_at  = EXCLUDED.last_failed_at,
                       next_attempt_at = EXCLUDED.last_failed_at
                                         + least(p_backoff * power(2, least(q.attempts, 20)), p_backoff_max),
                       last_sqlstate   = EXCLUDED.last_sqlstate,
                       last_message    = EXCLUDED.last_message,
                       last_run_id     = EXCLUDED.last_run_id;
                -- Quoted message (JSON string) keeps the line key=value; DETAIL is never logged.
                RAISE WARNING 'call_reaper event=call_poisoned run_id=% phase=% call_id=% sqlstate=% message=%',
                    p_run_id, p_phase, v_ids[v_a], v_state, to_json(v_message);
            END IF;
        END;
    END LOOP;

    IF reaped = 0 AND deferred = 0 AND cardinality(v_leaf_states) >= 2
       AND cardinality(v_leaf_states) = v_n - v_n_retry
       AND v_leaf_states <@ ARRAY[v_leaf_states[1]]
       AND left(v_leaf_states[1], 2) NOT IN ('22', '23') AND v_leaf_states[1] <> 'P0001' THEN
        RAISE EXCEPTION 'every call of the % batch (%) failed with SQLSTATE %: % (not poison: the error is not about one call)',
            p_phase, v_n - v_n_retry, v_leaf_states[1], v_message
            USING ERRCODE = v_leaf_states[1];
    END IF;

    IF v_n_retry > 0 THEN
        -- Retried calls that closed leave the quarantine; those that failed again stay.
        DELETE FROM messenger.call_reaper_quarantine AS q
         WHERE q.call_id = ANY (v_retry_ids)
           AND NOT EXISTS (SELECT FROM messenger.call_sessions AS s
                            WHERE s.call_id = q.call_id AND s.status = v_status);
    END IF;

    -- A full backlog lane moves the floor to where the next cycle must start: everything below
    -- that point it closed or quarantined. Passed (row-locked) and deferred calls stay above.
    -- A lane that comes up short ends a drain: without quarantine rows there is nothing for a
    -- floor to pass over, and keeping it would only hold back calls committed late below it.
    IF v_backlog_full THEN
        IF v_first_deferred IS NOT NULL
           AND (v_keys[v_first_deferred], v_ids[v_first_deferred]) < (v_upto_key, v_upto_id) THEN
            v_upto_key := v_keys[v_first_deferred];
            v_upto_id := v_ids[v_first_deferred];
        END IF;
        IF (v_upto_key, v_upto_id) > (v_floor_key, v_floor_id) THEN
            v_floor_key := v_upto_key;
            v_floor_id := v_upto_id;
            v_floor_moved := true;
        END IF;
    ELSIF NOT v_backlog_full AND v_next_retry IS NULL THEN
        IF v_floor_row THEN
            DELETE FROM messenger.call_reaper_claim_floor AS f WHERE f.phase = p_phase;
        END IF;
        v_floor_moved := false;
    END IF;
    IF v_floor_moved THEN
        INSERT INTO messenger.call_reaper_claim_floor AS f (phase, due_key, call_id, reset_at)
        VALUES (p_phase, v_floor_key, v_floor_id, v_floor_at)
        ON CONFLICT ON CONSTRAINT call_reaper_claim_floor_pkey DO UPDATE
           SET due_key = EXCLUDED.due_key, call_id = EXCLUDED.call_id, reset_at = EXCLUDED.reset_at;
    END IF;

    IF reaped > 0 THEN
        RAISE LOG 'call_reaper event=calls_reaped run_id=% phase=% status=% end_reason=% count=% calls=%',
            p_run_id, p_phase,
            CASE p_phase WHEN 'ring_timeout' THEN 'Missed' ELSE 'Failed' END,
            CASE p_phase WHEN 'ring_timeout' THEN 'Timeout' ELSE 'Error' END,
            reaped, array_to_string(v_calls, ',');
    END IF;
END
$$;

COMMENT ON FUNCTION messenger._reap_phase(text, uuid, timestamptz, interval, integer, interval, interval, interval, integer) IS
    'Private: one reaper phase (fresh, retry and backlog lanes claimed with SKIP LOCKED, closed set-based, poison bisected within a subtransaction budget).';
REVOKE ALL ON FUNCTION messenger._reap_phase(text, uuid, timestamptz, interval, integer, interval, interval, interval, integer) FROM PUBLIC;
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER FUNCTION messenger._reap_phase(text, uuid, timestamptz, interval, integer, interval, interval, interval, integer)
    OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;

COMMIT;
