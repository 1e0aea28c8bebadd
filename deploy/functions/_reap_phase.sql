-- Deploy call_timeout_reaper:functions/_reap_phase to pg

BEGIN;

-- Contract: runs one phase of one cycle inside the caller's transaction (the caller holds the
-- single-runner lock). p_run (messenger.call_reaper_phase_run) holds all it is told: the phase
-- (of messenger.call_reaper_phases(); unknown: 22023 before any read), the run id and as_of, the
-- window (a call is due when messenger.call_is_due(..., as_of - timeout)), the batch size, the
-- fresh lane's width (the polling interval), the quarantine backoffs, the subtransaction budget
-- and the previous cycle of the caller's drain or catch-up loop (or NULL).
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
--   fresh    healthy calls (not quarantined) due that started within the last fresh width
--            before the cutoff, oldest first: for Ringing, the ones the SLO (due + polling
--            interval) still covers.
--   backlog  healthy due calls that started earlier, oldest first, in the batch's remaining
--            room, from the claim floor (_reap_lanes checks it, _reap_save_floor moves it; the
--            stale-answered floor also keeps talking_since, the earliest updated_at of the calls
--            still talking that the backlog lane and the sweep walked: their claims return it).
-- A lane is a range of whole started_at groups of the claims' index (messenger._reap_claim_lane
-- says how a (started_at, call_id) bound maps onto groups); phase 2's order is started_at too,
-- not updated_at (which a progress update changes: docs/design.md). A floor inside a
-- group has the next cycle start at that group's first call.
-- Each healthy lane is one statement over ix_call_due (a range scan that stops at the lane's end
-- or the limit; pgTAP claim_*_plan and idle_cycle_reads_no_live_rows hold it to that) together
-- with its skipped_locked count: healthy due calls inside the range it walked (up to the last
-- claimed call's group of a full lane, to the lane's end otherwise) that it passed because another
-- transaction held them (or changed them after the cycle's snapshot); not capped.
-- Close: messenger._reap_close (set-based, poison bisected and quarantined, transient errors
-- re-raised, a budget of subtransactions; calls left untried are counted in deferred).
-- Floor: messenger._reap_save_floor places and writes it from what the backlog lane, the sweep
-- and the close did (messenger.call_reaper_backlog_outcome): where it stops, whether it is
-- kept or swept. When a stored floor is trusted: messenger._reap_floor_trusted.
-- Pair: p_run.calls and p_run.outbox (messenger._reap_pair). The default pair,
-- messenger.call_sessions and messenger.realtime_outbox, runs the static statements; another
-- pair of their shape runs the same texts through EXECUTE, with a claim floor of its own.
-- Log: one event=batch_selected record and, when it closed calls, one event=calls_reaped record
-- listing every closed call as call_id/caller/callee (status and end_reason are the phase's):
-- O(1) records per cycle, not one per call.
-- Why shaped so: docs/design.md, "Claiming" and "Poison":
--   * the anti-join against the quarantine runs only while the quarantine has a row at all;
--   * its statements and those of the routines it calls run with messenger._reap_pair's
--     planner settings (generic plans, no sort, no JIT), set there once.
CREATE FUNCTION messenger._reap_phase(
    p_run                messenger.call_reaper_phase_run,
    OUT reaped           integer,
    OUT skipped_locked   integer,
    OUT poisoned         integer,
    OUT deferred         integer,
    OUT subtransactions  integer,
    OUT lag_seconds      double precision[])
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    c_uuid_max   constant uuid := 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid;
    v_lanes      messenger.call_reaper_lanes;
    v_status     messenger.call_sessions.status%TYPE;
    v_share      constant integer := least(8, (p_run.batch + 9) / 10);
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
    v_talkers    integer;
    v_talking    timestamptz;
    v_n_fresh    integer := 0;
    v_hi_id      uuid;
    v_upto_key   timestamptz;
    v_upto_id    uuid;
    v_backlog    messenger.call_reaper_backlog_outcome;   -- for _reap_save_floor
    v_close      record;
BEGIN
    skipped_locked := 0;
    v_backlog := ROW('{}'::uuid[], '{}'::timestamptz[], NULL::timestamptz, NULL::uuid, 0, false, false, 0,
                     NULL::timestamptz, NULL::uuid, 0, NULL::timestamptz)::messenger.call_reaper_backlog_outcome;
    v_lanes := messenger._reap_lanes(p_run);
    v_status := v_lanes.status;

    IF v_lanes.retry_due THEN
        SELECT r.ids, r.started, r.keys INTO v_retry_ids, v_started, v_keys
          FROM messenger._reap_claim_retries(p_run.phase, v_status::text, p_run.as_of, v_lanes.cutoff, v_share,
                                            p_run.calls) AS r;
    END IF;

    -- Healthy lanes: fresh (1), then backlog (2), then the sweep (3), in the room the retry
    -- lane left; the batch is laid out fresh, retry, backlog, sweep. The sweep runs when the
    -- backlog lane came up short above a floor that full lanes moved and nobody swept since:
    -- from the start up to the floor, for calls committed below it while the drain ran.
    FOR v_lane IN 1 .. 3 LOOP
        v_limit := p_run.batch - cardinality(v_ids);
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
            CONTINUE WHEN v_backlog."full" OR v_lanes.floor_key IS NULL OR v_lanes.floor_swept;
            v_lo_key := '-infinity';
            v_lo_id := c_uuid_max;
            v_hi_key := v_lanes.floor_key;
            v_hi_id := v_lanes.floor_id;
        END IF;
        EXIT WHEN v_limit <= 0;
        SELECT c.ids, c.started, c.keys, c.upto_key, c.upto_id, c.skipped, c.talkers, c.talking_since
          INTO v_lane_ids, v_lane_st, v_lane_key, v_upto_key, v_upto_id, v_skipped, v_talkers, v_talking
          FROM messenger._reap_claim_lane(v_lanes, v_lo_key, v_lo_id, v_hi_key, v_hi_id, v_ids, v_limit,
                                          p_run.calls) AS c;
        skipped_locked := skipped_locked + v_skipped;
        IF v_lane = 1 THEN
            v_n_fresh := cardinality(v_lane_ids);
            v_ids := v_lane_ids || v_retry_ids;
            v_started := v_lane_st || v_started;
            v_keys := v_lane_key || v_keys;
            CONTINUE;
        ELSIF v_lane = 2 THEN
            v_backlog.ids := v_lane_ids;
            v_backlog.keys := v_lane_st;   -- the floor is a position of ix_call_due: started_at
            v_backlog.upto_key := v_upto_key;
            v_backlog.upto_id := v_upto_id;
            v_backlog.skipped := v_skipped;
            v_backlog."full" := cardinality(v_lane_ids) = v_limit;
        ELSE
            v_backlog.swept := cardinality(v_lane_ids) < v_limit AND v_skipped = 0;
        END IF;
        -- The calls still talking that the backlog lane and the sweep walked lie below the
        -- floor: _reap_save_floor keeps their earliest updated_at with it.
        v_backlog.talkers := v_backlog.talkers + v_talkers;
        v_backlog.talking_since := least(v_backlog.talking_since, v_talking);
        v_ids := v_ids || v_lane_ids;
        v_started := v_started || v_lane_st;
        v_keys := v_keys || v_lane_key;
    END LOOP;
    IF v_n_fresh = 0 AND cardinality(v_ids) = 0 THEN
        v_ids := v_retry_ids;   -- no room for the healthy lanes: the batch is the retry lane
    END IF;

    RAISE LOG 'call_reaper event=batch_selected run_id=% phase=% count=% retried=% skipped_locked=%',
        p_run.run_id, p_run.phase, cardinality(v_ids), cardinality(v_retry_ids), skipped_locked;
    v_close := messenger._reap_close(p_run, v_ids, v_started, v_keys, v_n_fresh, cardinality(v_retry_ids));
    reaped := v_close.reaped;
    poisoned := v_close.poisoned;
    deferred := v_close.deferred;
    subtransactions := v_close.subtransactions;
    lag_seconds := v_close.lag_seconds;

    IF cardinality(v_retry_ids) > 0 THEN
        -- Retried calls that closed leave the quarantine; those that failed again stay.
        IF p_run.calls = 'messenger.call_sessions'::regclass THEN
        -- pair: retried left
        DELETE FROM messenger.call_reaper_quarantine AS q
         WHERE q.call_id = ANY (v_retry_ids)
           AND NOT EXISTS (SELECT FROM messenger.call_sessions AS s
                            WHERE s.call_id = q.call_id AND s.status = v_status);
        ELSE
            -- Another pair's calls relation: the same statement.
            EXECUTE messenger._reap_pair_sql('messenger._reap_phase', 'retried left', p_run.calls, NULL,
                                             'v_retry_ids', 'v_status')
              USING v_retry_ids, v_status;
        END IF;
    END IF;

    -- The floor: _reap_save_floor places it from what the backlog lane and the close did; of
    -- the calls left untried it needs the first one up to the backlog lane's end.
    v_backlog.deferred := v_close.deferred;
    IF v_close.first_deferred <= v_n_fresh + cardinality(v_retry_ids) + cardinality(v_backlog.ids) THEN
        v_backlog.deferred_key := v_started[v_close.first_deferred];
        v_backlog.deferred_id := v_ids[v_close.first_deferred];
    END IF;
    PERFORM messenger._reap_save_floor(p_run, v_lanes, v_backlog);

    IF reaped > 0 THEN
        RAISE LOG 'call_reaper event=calls_reaped run_id=% phase=% status=% end_reason=% count=% calls=%',
            p_run.run_id, p_run.phase,
            (SELECT r.new_status FROM messenger.call_reaper_phases() AS r WHERE r.phase = p_run.phase),
            (SELECT r.end_reason FROM messenger.call_reaper_phases() AS r WHERE r.phase = p_run.phase),
            reaped, v_close.calls;
    END IF;
END
$$;

COMMENT ON FUNCTION messenger._reap_phase(messenger.call_reaper_phase_run) IS
    'Private: one reaper phase (retry, fresh and backlog lanes claimed with SKIP LOCKED, closed by _reap_close, claim floor moved).';
REVOKE ALL ON FUNCTION messenger._reap_phase(messenger.call_reaper_phase_run) FROM PUBLIC;
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER FUNCTION messenger._reap_phase(messenger.call_reaper_phase_run)
    OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;

COMMIT;
