-- Deploy call_timeout_reaper:functions/_reap_claim to pg

BEGIN;

-- Contract: claims one phase's batch inside the caller's transaction, every call FOR NO KEY
-- UPDATE SKIP LOCKED (a call held by answer-call/end-call is skipped, never waited for; NO KEY
-- UPDATE because FOR UPDATE conflicts with the KEY SHARE locks that inserts of child rows take
-- through a foreign key), in lanes sharing p_run.batch, where p_lanes (messenger._reap_lanes)
-- puts them:
--   retry    quarantined calls of this phase whose backoff expired, oldest next_attempt_at
--            first, at most ceil(batch_size / 10) and never more than 8 (the bounded share of
--            known-poison calls; messenger._reap_claim_retries). Their rows whose call is no
--            longer due in this phase (closed, answered, progressed, gone) are deleted: the
--            quarantine cleans itself up as the backoffs expire, reading only rows it looks at.
--   fresh    healthy calls (not quarantined) due that started within the last fresh width
--            before the cutoff, oldest first: for Ringing, the ones the SLO (due + polling
--            interval) still covers.
--   backlog  healthy due calls that started earlier, oldest first, in the batch's remaining
--            room, from the claim floor (_reap_lanes checks it, _reap_save_floor moves it).
--   sweep    when the backlog lane came up short above a floor that full lanes moved and nobody
--            swept since: from the start up to the floor, for calls committed below it while the
--            drain ran.
-- Each healthy lane is one messenger._reap_claim_lane: a range of whole started_at groups of
-- the claims' index, phase 2's order started_at too, not updated_at (which a progress update
-- changes: docs/design.md).
-- Returns the batch laid out fresh, retry, backlog, sweep (ids, started, keys), n_fresh (the
-- fresh lane's size), retry_ids (the retry lane's calls), skipped_locked (healthy due calls the
-- lanes passed because another transaction held them, or changed them after the snapshot; not
-- capped) and backlog: what the backlog lane and the sweep did (messenger.call_reaper_backlog_outcome,
-- the close's part filled in by the caller) for messenger._reap_save_floor. With no room for
-- the healthy lanes, the batch is the retry lane.
CREATE FUNCTION messenger._reap_claim(
    p_run              messenger.call_reaper_phase_run,
    p_lanes            messenger.call_reaper_lanes,
    OUT ids            uuid[],
    OUT started        timestamptz[],
    OUT keys           timestamptz[],
    OUT n_fresh        integer,
    OUT retry_ids      uuid[],
    OUT skipped_locked integer,
    OUT backlog        messenger.call_reaper_backlog_outcome)
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
-- backlog is a composite OUT argument beside others, which plpgsql_check flags in case a caller
-- means it spread into columns; its one caller reads it as a field:
-- @plpgsql_check_options: extra_warnings = false
DECLARE
    c_uuid_max   constant uuid := 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid;
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
    v_hi_id      uuid;
    v_limit      integer;
    v_skipped    integer;
    v_talkers    integer;
    v_talking    timestamptz;
    v_n_fresh    integer := 0;
    v_upto_key   timestamptz;
    v_upto_id    uuid;
    v_backlog    messenger.call_reaper_backlog_outcome;
BEGIN
    skipped_locked := 0;
    v_backlog := ROW('{}'::uuid[], '{}'::timestamptz[], NULL::timestamptz, NULL::uuid, 0, false, false, 0,
                     NULL::timestamptz, NULL::uuid, 0, NULL::timestamptz)::messenger.call_reaper_backlog_outcome;
    IF p_lanes.retry_due THEN
        SELECT r.ids, r.started, r.keys INTO v_retry_ids, v_started, v_keys
          FROM messenger._reap_claim_retries(p_run.phase, p_lanes.status, p_run.as_of, p_lanes.cutoff, v_share,
                                            p_run.calls) AS r;
    END IF;

    -- Healthy lanes: fresh (1), then backlog (2), then the sweep (3, see the header), in the
    -- room the retry lane left.
    FOR v_lane IN 1 .. 3 LOOP
        v_limit := p_run.batch - cardinality(v_ids);
        IF v_lane = 1 THEN
            v_limit := v_limit - cardinality(v_retry_ids);
            v_lo_key := p_lanes.fresh_from;
            v_lo_id := c_uuid_max;
            v_hi_key := p_lanes.cutoff;
            v_hi_id := c_uuid_max;
        ELSIF v_lane = 2 THEN
            CONTINUE WHEN p_lanes.backlog_empty;
            v_lo_key := p_lanes.backlog_key;
            v_lo_id := p_lanes.backlog_id;
            v_hi_key := p_lanes.fresh_from;
        ELSE
            CONTINUE WHEN v_backlog."full" OR p_lanes.floor_key IS NULL OR p_lanes.floor_swept;
            v_lo_key := '-infinity';
            v_lo_id := c_uuid_max;
            v_hi_key := p_lanes.floor_key;
            v_hi_id := p_lanes.floor_id;
        END IF;
        EXIT WHEN v_limit <= 0;
        SELECT c.ids, c.started, c.keys, c.upto_key, c.upto_id, c.skipped, c.talkers, c.talking_since
          INTO v_lane_ids, v_lane_st, v_lane_key, v_upto_key, v_upto_id, v_skipped, v_talkers, v_talking
          FROM messenger._reap_claim_lane(p_lanes, v_lo_key, v_lo_id, v_hi_key, v_hi_id, v_ids, v_limit,
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

    ids := v_ids;
    started := v_started;
    keys := v_keys;
    n_fresh := v_n_fresh;
    retry_ids := v_retry_ids;
    backlog := v_backlog;
END
$$;

COMMENT ON FUNCTION messenger._reap_claim(messenger.call_reaper_phase_run, messenger.call_reaper_lanes) IS
    'Private: one reaper phase''s batch: the retry, fresh, backlog and sweep lanes claimed with SKIP LOCKED, and what the backlog lane did for the claim floor.';
REVOKE ALL ON FUNCTION messenger._reap_claim(messenger.call_reaper_phase_run, messenger.call_reaper_lanes) FROM PUBLIC;
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER FUNCTION messenger._reap_claim(messenger.call_reaper_phase_run, messenger.call_reaper_lanes)
    OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;

COMMIT;
