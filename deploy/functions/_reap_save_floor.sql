-- Deploy call_timeout_reaper:functions/_reap_save_floor to pg

BEGIN;

-- Contract: after a phase closed its batch, places the phase's claim floor
-- (messenger.call_reaper_claim_floor) and writes it, inside the cycle's transaction.
--   p_run      the phase's run (phase, run id, as_of)
--   p_lanes    where its lanes lay (messenger._reap_lanes): the backlog start, the floor as
--              stored and whether it was trusted (messenger._reap_floor_trusted), the VACUUM count
--   p_outcome  what its backlog lane, sweep and close did (messenger.call_reaper_backlog_outcome)
-- Where it stops: everything from the backlog lane's start up to the first of these is closed
-- or quarantined, so the floor moves there:
--   * the first call the lane passed, row-locked by another transaction
--     (messenger._reap_first_passed, run only when it passed any: read in a later snapshot than
--     the claim's, it finds that call or one committed since, earlier);
--   * else the lane's last claimed call; for the stale-answered phase, how far the lane walked
--     (its last claim when full; otherwise its end, anchored at the last Answered call up to
--     there: the calls still talking it walked are counted in talking_since, below);
--   * the first call the close left untried (its subtransaction budget spent), when earlier.
-- With none of them (the lane claimed and passed nothing) it stays at the lane's start.
-- Whether it is kept: only where it saves work, that is while full backlog lanes move it (mid-
-- drain), once the backlog lanes closed c_keep_after calls from it (passed), or past 16
-- quarantined calls (p_lanes.over_quarantine), and for the stale-answered phase past 16 calls
-- still talking, or while its floor is trusted; otherwise there is no floor and the next cycle
-- walks from the start. A trusted stale-answered floor stays where it is (no write) through a
-- cycle that closed, passed and deferred nothing and walked fewer than 16 new talkers, so idle
-- cycles write it about once per 16 calls that outlast the window, and start from the
-- beginning about once per stale window (when check (e) stops trusting it).
-- talking_since (stale-answered only): the least of the earliest updated_at of the calls still
-- talking that the backlog lane and the sweep walked, the trusted floor's own talking_since,
-- and this cycle's as_of and clock; why that bounds every call below the floor:
-- messenger._reap_floor_trusted, check (e).
-- Swept: unless a full lane moved it or calls were left untried, once nothing below it can be
-- missing: the cycle started from the beginning (no trusted floor), or it was swept already, or
-- the sweep below it ran and found nothing left.
-- The write, only when something changed, so an idle cycle over a trusted floor writes nothing:
--   * no floor: a stored row is deleted (it failed its checks or is not worth keeping);
--   * the trusted floor's own position and swept flag: nothing;
--   * otherwise the row is written with its anchor (the call's started_at, so the check finds
--     it in one partition), the cycle's run id and as_of, and call_sessions' VACUUM count; if
--     the anchor went meanwhile, no floor rather than one no check can confirm. A stored row is
--     updated, never written back: if the quarantine's trigger deleted it during this cycle (its
--     retry lane released a call below it that progressed, uncounted in talking_since), the
--     next cycle walks from the start and finds that call.
-- Each pair keeps its own floor, keyed by its calls relation (p_run.calls) and phase: the
-- default pair's statements are static, another pair's (a Citus shard pair) the same texts
-- through EXECUTE.
-- When a floor is trusted: messenger._reap_floor_trusted; a released quarantined call below it
-- resets it: messenger._call_reaper_quarantine_released. docs/design.md, "The claim floor".
CREATE FUNCTION messenger._reap_save_floor(
    p_run     messenger.call_reaper_phase_run,
    p_lanes   messenger.call_reaper_lanes,
    p_outcome messenger.call_reaper_backlog_outcome)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    c_keep_after constant integer := 1000;
    c_many_talkers constant integer := 16;
    v_answered constant boolean := p_lanes.status = 'Answered';
    v_talking timestamptz;
    v_status  messenger.call_sessions.status%TYPE := p_lanes.status;   -- text, varchar or the enum
    v_n       constant integer := coalesce(cardinality(p_outcome.ids), 0);
    v_key     timestamptz;
    v_id      uuid;
    v_passed  bigint;
    v_swept   boolean;
    v_anchor  timestamptz;
    c_after   constant uuid := 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid;   -- an id bound past a key's every call
BEGIN
    IF p_outcome.skipped > 0 THEN
        SELECT x.due_key, x.call_id INTO v_key, v_id
          FROM messenger._reap_first_passed(p_lanes.status, p_lanes.backlog_key, p_lanes.backlog_id,
                                            p_outcome.upto_key, p_outcome.upto_id, p_outcome.ids,
                                            p_lanes.quarantined, p_run.calls) AS x;
    END IF;
    IF v_key IS NULL AND v_answered AND p_outcome."full" THEN
        v_key := p_outcome.upto_key;   -- the lane's last claim
        v_id := p_outcome.upto_id;
    ELSIF v_key IS NULL AND v_answered AND p_outcome.upto_key IS NOT NULL THEN
        -- The lane's end, anchored at the last Answered call up to it (an anchor must exist:
        -- check (c)); one backward probe of ix_call_due, only here.
        IF p_run.calls = 'messenger.call_sessions'::regclass THEN
        -- pair: last answered
        SELECT s.started_at, s.call_id
          INTO v_key, v_id
          FROM messenger.call_sessions AS s
         WHERE s.status = v_status
           AND s.status IN ('Ringing', 'Answered')   -- the claim index's predicate, for a generic plan
           AND s.started_at <= p_outcome.upto_key - CASE WHEN p_outcome.upto_id = c_after THEN interval '0' ELSE interval '1 microsecond' END
         ORDER BY s.started_at DESC, s.call_id DESC
         LIMIT 1;
        ELSE
            -- Another pair's calls relation: the same statement, planned per call.
            EXECUTE messenger._reap_pair_sql('messenger._reap_save_floor', 'last answered', p_run.calls, NULL,
                                             'v_status', 'p_outcome.upto_key', 'p_outcome.upto_id', 'c_after')
               INTO v_key, v_id
              USING v_status, p_outcome.upto_key, p_outcome.upto_id, c_after;
        END IF;
        IF v_key < p_lanes.backlog_key OR (v_key = p_lanes.backlog_key AND p_lanes.backlog_id = c_after) THEN
            v_key := NULL;   -- nothing in the lane: it stays at the lane's start
            v_id := NULL;
        END IF;
    ELSIF v_key IS NULL AND v_n > 0 THEN
        v_key := p_outcome.keys[v_n];
        v_id := p_outcome.ids[v_n];
    END IF;
    IF (p_outcome.deferred_key, p_outcome.deferred_id) < (v_key, v_id) THEN
        v_key := p_outcome.deferred_key;
        v_id := p_outcome.deferred_id;
    END IF;
    IF v_key IS NULL THEN
        v_key := p_lanes.backlog_key;
        v_id := p_lanes.backlog_id;
    END IF;
    v_passed := coalesce(p_lanes.floor_passed, 0) + v_n;
    IF v_answered AND p_lanes.floor_key IS NOT NULL AND NOT p_outcome."full" AND v_n = 0
       AND p_outcome.skipped = 0 AND p_outcome.deferred = 0 AND p_outcome.talkers < c_many_talkers THEN
        -- An idle cycle over a trusted floor that walked only a few new talkers leaves it (and
        -- writes nothing): the next cycles walk those few again until more come.
        v_key := p_lanes.floor_key;
        v_id := p_lanes.floor_id;
    ELSIF NOT (p_outcome."full" OR v_passed >= c_keep_after OR p_lanes.over_quarantine
               OR (v_answered AND (p_outcome.talkers >= c_many_talkers OR p_lanes.floor_key IS NOT NULL))) THEN
        v_key := '-infinity';
    END IF;
    -- Why these bound every Answered call below the floor: docs/design.md, "The stale-answered
    -- floor's talking_since" (an as_of far ahead of the clock is a test cluster's).
    IF v_answered THEN
        v_talking := least(p_outcome.talking_since, p_lanes.floor_talking_since, p_run.as_of,
                           CASE WHEN p_run.as_of <= now() + interval '5 seconds' THEN now() END);
    END IF;
    v_swept := NOT p_outcome."full" AND p_outcome.deferred = 0
               AND (p_lanes.floor_key IS NULL OR p_lanes.floor_swept OR p_outcome.swept);

    IF v_key > '-infinity' THEN
        IF (v_key, v_id) = (p_lanes.floor_key, p_lanes.floor_id) AND v_swept IS NOT DISTINCT FROM p_lanes.floor_swept THEN
            RETURN;
        END IF;
        -- The anchor's started_at (check (c) finds it by it); gone meanwhile: no floor rather
        -- than one no check can confirm.
        IF p_run.calls = 'messenger.call_sessions'::regclass THEN
        -- pair: anchor
        SELECT a.started_at
          INTO v_anchor
          FROM messenger.call_sessions AS a WHERE a.call_id = v_id LIMIT 1;
        ELSE
            -- Another pair's calls relation: the same statement, planned per call.
            EXECUTE messenger._reap_pair_sql('messenger._reap_save_floor', 'anchor', p_run.calls, NULL, 'v_id')
               INTO v_anchor
              USING v_id;
        END IF;
    END IF;
    IF v_anchor IS NULL THEN   -- no floor ('-infinity'), or its anchor is gone
        IF p_lanes.floor_stored THEN
            DELETE FROM messenger.call_reaper_claim_floor AS f WHERE f.calls = p_run.calls AND f.phase = p_run.phase;
        END IF;
        RETURN;
    END IF;
    IF p_lanes.floor_stored THEN
        -- An UPDATE, never an upsert: a row the quarantine's trigger deleted since _reap_lanes
        -- read it (this cycle's retry lane, or a DBA, released a call below it) stays deleted.
        UPDATE messenger.call_reaper_claim_floor AS f
           SET due_key = v_key, call_id = v_id, reset_at = p_lanes.floor_reset_at, as_of = p_run.as_of,
               run_id = p_run.run_id, anchor_started_at = v_anchor, vacuums = p_lanes.vacuums,
               swept = v_swept, passed = v_passed, talking_since = v_talking
         WHERE f.calls = p_run.calls AND f.phase = p_run.phase;
        RETURN;
    END IF;
    INSERT INTO messenger.call_reaper_claim_floor AS f
           (calls, phase, due_key, call_id, reset_at, as_of, run_id, anchor_started_at, vacuums, swept, passed,
            talking_since)
    VALUES (p_run.calls, p_run.phase, v_key, v_id, p_lanes.floor_reset_at, p_run.as_of, p_run.run_id, v_anchor,
            p_lanes.vacuums, v_swept, v_passed, v_talking)
    ON CONFLICT ON CONSTRAINT call_reaper_claim_floor_pkey DO NOTHING;   -- only a cycle stores one, under the lock
END
$$;

COMMENT ON FUNCTION messenger._reap_save_floor(messenger.call_reaper_phase_run, messenger.call_reaper_lanes, messenger.call_reaper_backlog_outcome) IS
    'Private: where one reaper phase''s claim floor stops after a cycle, whether it is kept and swept, and its write (nothing when it did not change).';
REVOKE ALL ON FUNCTION messenger._reap_save_floor(messenger.call_reaper_phase_run, messenger.call_reaper_lanes, messenger.call_reaper_backlog_outcome) FROM PUBLIC;
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER FUNCTION messenger._reap_save_floor(messenger.call_reaper_phase_run, messenger.call_reaper_lanes, messenger.call_reaper_backlog_outcome)
    OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;

COMMIT;
