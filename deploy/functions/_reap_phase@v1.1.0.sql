-- Deploy call_timeout_reaper:functions/_reap_phase to pg

BEGIN;

-- Contract: runs one phase of one cycle inside the caller's transaction (the caller holds the
-- single-runner lock).
--   p_phase        a phase of messenger.call_reaper_phases(); unknown: 22023 before any read
--   p_as_of, p_timeout  a call is due when messenger.call_due_key(...) <= p_as_of - p_timeout
--   p_batch_size   most calls this phase claims
--   p_fresh        width of the fresh lane (the polling interval)
--   p_backoff, p_backoff_max  quarantine backoff: p_backoff, doubling per failure, capped
--   p_budget       most subtransactions this phase may open
--   p_after_run    the previous cycle of the caller's drain or catch-up loop (or NULL)
--
-- Claim: every call FOR NO KEY UPDATE SKIP LOCKED (a call held by answer-call/end-call is
-- skipped, never waited for; NO KEY UPDATE because FOR UPDATE conflicts with the KEY SHARE
-- locks that inserts of child rows take through a foreign key), in three lanes sharing one
-- batch, where messenger._reap_lanes puts them:
--   retry    quarantined calls of this phase whose backoff expired, oldest next_attempt_at
--            first, at most ceil(batch_size / 10) and never more than 8 (the bounded share of
--            known-poison calls). Their rows whose call is no longer due in this phase (closed,
--            answered, progressed, gone) are deleted: the quarantine cleans itself up as the
--            backoffs expire, reading only rows it looks at anyway.
--   fresh    healthy calls (not quarantined) due within the last p_fresh, oldest first: the
--            ones the SLO (due + polling interval) still covers.
--   backlog  healthy calls due earlier, oldest first, in the batch's remaining room, from the
--            claim floor (_reap_lanes checks it; this function moves it, see the end).
-- Each healthy lane is one statement over ix_call_due (a range scan that stops at the lane's end
-- or the limit; pgTAP claim_*_plan and idle_cycle_reads_no_live_rows hold it to that) together
-- with its skipped_locked count: healthy due calls inside the range it walked (up to the last
-- claimed call of a full lane, to the lane's end otherwise) that it passed because another
-- transaction held them (or changed them after the cycle's snapshot); not capped.
-- Close: messenger._reap_close (set-based, poison bisected and quarantined, transient errors
-- re-raised, a budget of subtransactions; calls left untried are counted in deferred).
-- Floor: after the backlog lane ran, everything from its start up to the first of: the first
-- call it passed, the first call left untried, its last claimed call, is closed or
-- quarantined, so the floor moves there (a cycle that claimed and passed nothing writes
-- nothing). An untrusted floor no cycle could move is deleted.
-- Log: one event=batch_selected record and, when it closed calls, one event=calls_reaped record
-- listing every closed call as call_id/caller/callee (status and end_reason are the phase's):
-- O(1) records per cycle, not one per call.
-- Why shaped so: docs/design.md, "Claiming" and "Poison":
--   * the anti-join against the quarantine runs only while the quarantine has a row at all;
--   * plan_cache_mode = force_generic_plan: planned once per session, not once per cycle (on a
--     partitioned call_sessions, once per partition per cycle); the generic plans are the same
--     range scans and prune partitions at executor start-up;
--   * enable_sort = off: a claim walks ix_call_due in due order and never sorts a lane;
--   * jit = off: the cost a disabled sort is charged would otherwise make the executor
--     JIT-compile statements that run in microseconds.
-- v1.1.0: one more argument (p_after_run, defaulted, so a v1.0.0 caller still resolves it).
DROP FUNCTION messenger._reap_phase(text, uuid, timestamptz, interval, integer, interval, interval, interval, integer);
CREATE FUNCTION messenger._reap_phase(
    p_phase              text,
    p_run_id             uuid,
    p_as_of              timestamptz,
    p_timeout            interval,
    p_batch_size         integer,
    p_fresh              interval,
    p_backoff            interval,
    p_backoff_max        interval,
    p_budget             integer,
    p_after_run          uuid DEFAULT NULL,
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
    c_uuid_max   constant uuid := 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid;
    v_lanes      record;
    v_status     messenger.call_sessions.status%TYPE;
    v_share      constant integer := least(8, (p_batch_size + 9) / 10);
    v_ids        uuid[] := '{}'::uuid[];
    v_started    timestamptz[] := '{}'::timestamptz[];
    v_keys       timestamptz[] := '{}'::timestamptz[];
    v_retry_ids  uuid[] := '{}'::uuid[];
    v_lane_ids   uuid[];
    v_lane_st    timestamptz[];
    v_lane_key   timestamptz[];
    v_lo_key     timestamptz;
    v_lo_id      uuid;
    v_hi_key     timestamptz;
    v_limit      integer;
    v_skipped    integer;
    v_n_fresh    integer := 0;
    v_hi_id      uuid;
    v_upto_key   timestamptz;
    v_upto_id    uuid;
    v_full       boolean := false;   -- the backlog lane filled its room
    v_swept      boolean := false;   -- the sweep ran and found nothing left below the floor
    v_n_backlog  integer := 0;
    v_floor_key  timestamptz;
    v_floor_id   uuid;
    v_passed     bigint;
    c_keep_after constant integer := 1000;
    v_close      record;
BEGIN
    skipped_locked := 0;
    v_lanes := messenger._reap_lanes(p_phase, p_as_of, p_timeout, p_fresh, p_backoff_max, p_after_run);
    v_status := v_lanes.status;

    IF v_lanes.retry_due THEN
        SELECT r.ids, r.started, r.keys INTO v_retry_ids, v_started, v_keys
          FROM messenger._reap_claim_retries(p_phase, v_status::text, p_as_of, v_lanes.cutoff, v_share) AS r;
    END IF;

    -- Healthy lanes: fresh (1), then backlog (2), then the sweep (3), in the room the retry
    -- lane left; the batch is laid out fresh, retry, backlog, sweep. The sweep runs when the
    -- backlog lane came up short above a floor that full lanes moved and nobody swept since:
    -- from the start up to the floor, for calls committed below it while the drain ran.
    FOR v_lane IN 1 .. 3 LOOP
        v_limit := p_batch_size - cardinality(v_ids);
        IF v_lane = 1 THEN
            v_limit := v_limit - cardinality(v_retry_ids);
            v_lo_key := v_lanes.fresh_from;
            v_lo_id := c_uuid_max;
            v_hi_key := v_lanes.cutoff;
            v_hi_id := c_uuid_max;
        ELSIF v_lane = 2 THEN
            CONTINUE WHEN v_lanes.backlog_empty;
            v_lo_key := v_lanes.backlog_key;
            v_lo_id := v_lanes.backlog_id;
            v_hi_key := v_lanes.fresh_from;
        ELSE
            CONTINUE WHEN v_full OR v_lanes.floor_key IS NULL OR v_lanes.floor_swept;
            v_lo_key := '-infinity';
            v_lo_id := c_uuid_max;
            v_hi_key := v_lanes.floor_key;
            v_hi_id := v_lanes.floor_id;
        END IF;
        EXIT WHEN v_limit <= 0;
        SELECT c.ids, c.started, c.keys, c.upto_key, c.upto_id, c.skipped
          INTO v_lane_ids, v_lane_st, v_lane_key, v_upto_key, v_upto_id, v_skipped
          FROM messenger._reap_claim_lane(v_status::text, v_lo_key, v_lo_id, v_hi_key, v_hi_id, v_ids,
                                          v_lanes.quarantined, v_limit) AS c;
        skipped_locked := skipped_locked + v_skipped;
        IF v_lane = 1 THEN
            v_n_fresh := cardinality(v_lane_ids);
            v_ids := v_lane_ids || v_retry_ids;
            v_started := v_lane_st || v_started;
            v_keys := v_lane_key || v_keys;
            CONTINUE;
        ELSIF v_lane = 2 THEN
            -- Where the floor may move: the first call the lane passed, else its last claim.
            v_full := cardinality(v_lane_ids) = v_limit;
            v_n_backlog := cardinality(v_lane_ids);
            v_floor_key := NULL;
            IF v_skipped > 0 THEN
                SELECT x.due_key, x.call_id INTO v_floor_key, v_floor_id
                  FROM messenger._reap_first_passed(v_status::text, v_lo_key, v_lo_id, v_upto_key, v_upto_id,
                                                    v_lane_ids, v_lanes.quarantined) AS x;
            END IF;
            IF v_floor_key IS NULL AND cardinality(v_lane_ids) > 0 THEN
                v_floor_key := v_lane_key[cardinality(v_lane_key)];
                v_floor_id := v_lane_ids[cardinality(v_lane_ids)];
            END IF;
        ELSE
            v_swept := cardinality(v_lane_ids) < v_limit AND v_skipped = 0;
        END IF;
        v_ids := v_ids || v_lane_ids;
        v_started := v_started || v_lane_st;
        v_keys := v_keys || v_lane_key;
    END LOOP;
    IF v_n_fresh = 0 AND cardinality(v_ids) = 0 THEN
        v_ids := v_retry_ids;   -- no room for the healthy lanes: the batch is the retry lane
    END IF;

    RAISE LOG 'call_reaper event=batch_selected run_id=% phase=% count=% retried=% skipped_locked=%',
        p_run_id, p_phase, cardinality(v_ids), cardinality(v_retry_ids), skipped_locked;
    v_close := messenger._reap_close(p_phase, p_run_id, p_as_of, p_timeout, v_ids, v_started, v_keys,
                                     v_n_fresh, cardinality(v_retry_ids), p_budget, p_backoff, p_backoff_max);
    reaped := v_close.reaped;
    poisoned := v_close.poisoned;
    deferred := v_close.deferred;
    subtransactions := v_close.subtransactions;
    lag_seconds := v_close.lag_seconds;

    IF cardinality(v_retry_ids) > 0 THEN
        -- Retried calls that closed leave the quarantine; those that failed again stay.
        DELETE FROM messenger.call_reaper_quarantine AS q
         WHERE q.call_id = ANY (v_retry_ids)
           AND NOT EXISTS (SELECT FROM messenger.call_sessions AS s
                            WHERE s.call_id = q.call_id AND s.status = v_status);
    END IF;

    -- The floor: where the backlog lane stopped, or the first call left untried before that;
    -- swept unless a full lane moved it (a cycle that started from the beginning, or swept,
    -- walked everything below it).
    IF v_close.first_deferred IS NOT NULL AND v_close.first_deferred <= v_n_fresh + cardinality(v_retry_ids) + v_n_backlog
       AND (v_keys[v_close.first_deferred], v_ids[v_close.first_deferred]) < (v_floor_key, v_floor_id) THEN
        v_floor_key := v_keys[v_close.first_deferred];
        v_floor_id := v_ids[v_close.first_deferred];
    END IF;
    IF v_floor_key IS NULL THEN
        v_floor_key := v_lanes.backlog_key;
        v_floor_id := v_lanes.backlog_id;
    END IF;
    -- Kept only where it saves work: mid-drain, after a drain of c_keep_after calls, or past
    -- many quarantined calls; otherwise no floor (the next cycle walks from the start).
    v_passed := coalesce(v_lanes.floor_passed, 0) + v_n_backlog;
    IF NOT (v_full OR v_passed >= c_keep_after OR v_lanes.over_quarantine) THEN
        v_floor_key := '-infinity';
    END IF;
    PERFORM messenger._reap_save_floor(p_phase, v_floor_key, v_floor_id, v_lanes.floor_key, v_lanes.floor_id,
                                       v_lanes.floor_swept, v_lanes.floor_stored, v_lanes.floor_reset_at,
                                       NOT v_full AND v_close.deferred = 0
                                       AND (v_lanes.floor_key IS NULL OR v_lanes.floor_swept OR v_swept),
                                       v_passed, v_lanes.vacuums, p_run_id, p_as_of);

    IF reaped > 0 THEN
        RAISE LOG 'call_reaper event=calls_reaped run_id=% phase=% status=% end_reason=% count=% calls=%',
            p_run_id, p_phase,
            (SELECT r.new_status FROM messenger.call_reaper_phases() AS r WHERE r.phase = p_phase),
            (SELECT r.end_reason FROM messenger.call_reaper_phases() AS r WHERE r.phase = p_phase),
            reaped, v_close.calls;
    END IF;
END
$$;

COMMENT ON FUNCTION messenger._reap_phase(text, uuid, timestamptz, interval, integer, interval, interval, interval, integer, uuid) IS
    'Private: one reaper phase (retry, fresh and backlog lanes claimed with SKIP LOCKED, closed by _reap_close, claim floor moved).';
REVOKE ALL ON FUNCTION messenger._reap_phase(text, uuid, timestamptz, interval, integer, interval, interval, interval, integer, uuid) FROM PUBLIC;
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER FUNCTION messenger._reap_phase(text, uuid, timestamptz, interval, integer, interval, interval, interval, integer, uuid)
    OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;

COMMIT;
