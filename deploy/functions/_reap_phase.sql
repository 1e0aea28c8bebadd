-- Deploy call_timeout_reaper:functions/_reap_phase to pg

BEGIN;

-- Contract: runs one phase of one cycle inside the caller's transaction (the caller holds the
-- single-runner lock).
--   1. Claims up to p_batch_size overdue calls of the phase, oldest due first, with
--      FOR NO KEY UPDATE SKIP LOCKED: a call held by answer-call/end-call is skipped, never
--      waited for. NO KEY UPDATE, not UPDATE: FOR UPDATE conflicts with the KEY SHARE locks that
--      inserts of child rows take through a foreign key, and would wrongly skip such calls.
--      The ids are collected into arrays first, so the LIMIT is applied exactly once.
--      Quarantined calls whose next_attempt_at is still ahead are not claimed.
--   2. Counts the overdue calls it had to skip because another transaction held them.
--   3. Closes the claimed calls with one set-based statement (messenger._reap_apply). Only if
--      that raises does it redo the batch one call at a time, each in its own subtransaction:
--      a call that raises is left active, counted as poisoned, logged with its CallId and
--      SQLSTATE, and quarantined with a doubling backoff, so poison can never starve healthy
--      calls. query_canceled is not caught by WHEN OTHERS: cancellation rolls back the cycle.
-- Phase keys: ring_timeout is due at started_at + timeout, stale_answered at updated_at +
-- timeout; each claim is a range scan of its own partial index (ix_call_ringing_due,
-- ix_call_answered_due) that stops at the cutoff, so an idle phase reads no rows (pgTAP
-- claim_*_plan and idle_cycle_reads_no_live_rows hold it to that). plan_cache_mode =
-- force_generic_plan: the statements are planned once per session instead of every cycle
-- (on a partitioned call_sessions, every partition every cycle); the generic plans are the
-- same range scans and prune partitions at executor start-up.
CREATE OR REPLACE FUNCTION messenger._reap_phase(
    p_phase              text,
    p_run_id             uuid,
    p_as_of              timestamptz,
    p_timeout            interval,
    p_batch_size         integer,
    p_backoff            interval,
    p_backoff_max        interval,
    OUT reaped           integer,
    OUT skipped_locked   integer,
    OUT poisoned         integer,
    OUT lag_seconds      double precision[])
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_cutoff  constant timestamptz := p_as_of - p_timeout;
    v_ids     uuid[];
    v_started timestamptz[];
    v_due     timestamptz[];
    v_n       integer;
    v_row     record;
    v_lines   text[];
    v_line    text;
    v_state   text;
    v_message text;
BEGIN
    reaped := 0;
    skipped_locked := 0;
    poisoned := 0;
    lag_seconds := '{}'::double precision[];

    -- One statement per phase, so the claim and the count of the rows it had to skip read
    -- the same snapshot: a row committed by someone else between two statements is not
    -- "skipped", it was simply not there yet. Skipped rows are the overdue ones ordered
    -- before the last claimed row (all of them when the batch is not full).
    -- The count walks the claim's index in the claim's order up to that row (upto_key,
    -- upto_id), so it reads the batch and what was skipped, never the rest of the backlog:
    -- bounded only by the cutoff and without ORDER BY it read every overdue call of a large
    -- backlog each cycle, and the planner (which cannot see that live calls are the recent
    -- ones) even chose a sequential scan of call_sessions for it, idle cycles included. The
    -- claimed rows lie in that range too and are counted and subtracted rather than each row
    -- being tested against the claimed ids (batch_size^2 comparisons); LIMIT 2 * batch_size
    -- and least(..., batch_size) keep the old cap of batch_size skipped rows.
    IF p_phase = 'ring_timeout' THEN
        WITH claimed AS MATERIALIZED (
            SELECT s.call_id, s.started_at, s.started_at AS due_key
              FROM messenger.call_sessions AS s
             WHERE s.status = 'Ringing'
               AND s.started_at <= v_cutoff
               AND NOT EXISTS (SELECT FROM messenger.call_reaper_quarantine AS q
                                WHERE q.call_id = s.call_id AND q.next_attempt_at > p_as_of)
             ORDER BY s.started_at, s.call_id
             LIMIT p_batch_size
               FOR NO KEY UPDATE OF s SKIP LOCKED
        ), batch AS (
            SELECT coalesce(array_agg(c.call_id ORDER BY c.due_key, c.call_id), '{}') AS ids,
                   coalesce(array_agg(c.started_at ORDER BY c.due_key, c.call_id), '{}') AS started,
                   coalesce(array_agg(c.due_key ORDER BY c.due_key, c.call_id), '{}') AS keys,
                   coalesce(array_agg(c.due_key + p_timeout ORDER BY c.due_key, c.call_id), '{}') AS due
              FROM claimed AS c
        ), bound AS (
            SELECT b.*,
                   CASE WHEN cardinality(b.ids) < p_batch_size THEN v_cutoff
                        ELSE b.keys[p_batch_size] END AS upto_key,
                   CASE WHEN cardinality(b.ids) < p_batch_size THEN 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid
                        ELSE b.ids[p_batch_size] END AS upto_id
              FROM batch AS b
        )
        SELECT b.ids, b.started, b.due,
               least((SELECT greatest(count(*)::integer - cardinality(b.ids), 0)
                        FROM (SELECT
                                FROM messenger.call_sessions AS s
                               WHERE s.status = 'Ringing'
                                 AND s.started_at <= b.upto_key
                                 AND (s.started_at, s.call_id) <= (b.upto_key, b.upto_id)
                                 AND NOT EXISTS (SELECT FROM messenger.call_reaper_quarantine AS q
                                                  WHERE q.call_id = s.call_id AND q.next_attempt_at > p_as_of)
                               ORDER BY s.started_at, s.call_id
                               LIMIT 2 * p_batch_size) AS x),
                     p_batch_size)
          INTO v_ids, v_started, v_due, skipped_locked
          FROM bound AS b;
    ELSIF p_phase = 'stale_answered' THEN
        WITH claimed AS MATERIALIZED (
            SELECT s.call_id, s.started_at, s.updated_at AS due_key
              FROM messenger.call_sessions AS s
             WHERE s.status = 'Answered'
               AND s.updated_at <= v_cutoff
               AND NOT EXISTS (SELECT FROM messenger.call_reaper_quarantine AS q
                                WHERE q.call_id = s.call_id AND q.next_attempt_at > p_as_of)
             ORDER BY s.updated_at, s.call_id
             LIMIT p_batch_size
               FOR NO KEY UPDATE OF s SKIP LOCKED
        ), batch AS (
            SELECT coalesce(array_agg(c.call_id ORDER BY c.due_key, c.call_id), '{}') AS ids,
                   coalesce(array_agg(c.started_at ORDER BY c.due_key, c.call_id), '{}') AS started,
                   coalesce(array_agg(c.due_key ORDER BY c.due_key, c.call_id), '{}') AS keys,
                   coalesce(array_agg(c.due_key + p_timeout ORDER BY c.due_key, c.call_id), '{}') AS due
              FROM claimed AS c
        ), bound AS (
            SELECT b.*,
                   CASE WHEN cardinality(b.ids) < p_batch_size THEN v_cutoff
                        ELSE b.keys[p_batch_size] END AS upto_key,
                   CASE WHEN cardinality(b.ids) < p_batch_size THEN 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid
                        ELSE b.ids[p_batch_size] END AS upto_id
              FROM batch AS b
        )
        SELECT b.ids, b.started, b.due,
               least((SELECT greatest(count(*)::integer - cardinality(b.ids), 0)
                        FROM (SELECT
                                FROM messenger.call_sessions AS s
                               WHERE s.status = 'Answered'
                                 AND s.updated_at <= b.upto_key
                                 AND (s.updated_at, s.call_id) <= (b.upto_key, b.upto_id)
                                 AND NOT EXISTS (SELECT FROM messenger.call_reaper_quarantine AS q
                                                  WHERE q.call_id = s.call_id AND q.next_attempt_at > p_as_of)
                               ORDER BY s.updated_at, s.call_id
                               LIMIT 2 * p_batch_size) AS x),
                     p_batch_size)
          INTO v_ids, v_started, v_due, skipped_locked
          FROM bound AS b;
    ELSE
        RAISE EXCEPTION 'unknown reaper phase %', p_phase USING ERRCODE = '22023';
    END IF;
    v_n := cardinality(v_ids);

    RAISE LOG 'call_reaper event=batch_selected run_id=% phase=% count=% skipped_locked=%',
        p_run_id, p_phase, v_n, skipped_locked;
    IF v_n = 0 THEN
        RETURN;
    END IF;

    BEGIN
        -- Counts, lags and log lines come out of the statement that closes the batch: a
        -- PL/pgSQL loop over its rows (an array append and a RAISE per call) cost a fifth of a
        -- draining cycle. Still one LOG record per call, so every record is one key=value line.
        SELECT count(*)::integer,
               coalesce(array_agg(a.lag_seconds), '{}'),
               coalesce(array_agg(format('call_reaper event=call_reaped run_id=%s call_id=%s status=%s end_reason=%s caller=%s callee=%s',
                                         p_run_id, a.call_id, a.status, a.end_reason, a.caller_user_id, a.callee_user_id)), '{}')
          INTO reaped, lag_seconds, v_lines
          FROM messenger._reap_apply(p_phase, v_ids, v_started, v_due, p_run_id, p_as_of) AS a;
        FOREACH v_line IN ARRAY v_lines LOOP
            RAISE LOG '%', v_line;
        END LOOP;
        RETURN;
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT;
        RAISE LOG 'call_reaper event=batch_failed run_id=% phase=% count=% sqlstate=% action=retry_one_by_one',
            p_run_id, p_phase, v_n, v_state;
        reaped := 0;
        lag_seconds := '{}'::double precision[];
    END;

    FOR i IN 1 .. v_n LOOP
        BEGIN
            SELECT * INTO v_row
              FROM messenger._reap_apply(p_phase, ARRAY[v_ids[i]], ARRAY[v_started[i]], ARRAY[v_due[i]],
                                         p_run_id, p_as_of);
            IF FOUND THEN
                reaped := reaped + 1;
                lag_seconds := lag_seconds || v_row.lag_seconds;
                RAISE LOG 'call_reaper event=call_reaped run_id=% call_id=% status=% end_reason=% caller=% callee=%',
                    p_run_id, v_row.call_id, v_row.status, v_row.end_reason, v_row.caller_user_id, v_row.callee_user_id;
            END IF;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT;
            poisoned := poisoned + 1;
            INSERT INTO messenger.call_reaper_quarantine AS q
                   (call_id, phase, attempts, first_failed_at, last_failed_at, next_attempt_at,
                    last_sqlstate, last_message, last_run_id)
            VALUES (v_ids[i], p_phase, 1, p_as_of, p_as_of, p_as_of + p_backoff,
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
            RAISE WARNING 'call_reaper event=item_failed run_id=% phase=% call_id=% sqlstate=% message=%',
                p_run_id, p_phase, v_ids[i], v_state, to_json(v_message);
        END;
    END LOOP;
END
$$;

COMMENT ON FUNCTION messenger._reap_phase(text, uuid, timestamptz, interval, integer, interval, interval) IS
    'Private: one reaper phase (claim with SKIP LOCKED, close set-based, isolate poison calls).';
REVOKE ALL ON FUNCTION messenger._reap_phase(text, uuid, timestamptz, interval, integer, interval, interval) FROM PUBLIC;
ALTER FUNCTION messenger._reap_phase(text, uuid, timestamptz, interval, integer, interval, interval)
    OWNER TO messenger_call_reaper_owner;

COMMIT;
