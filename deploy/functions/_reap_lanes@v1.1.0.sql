-- Deploy call_timeout_reaper:functions/_reap_lanes to pg

BEGIN;

-- Contract: where one phase's lanes lie for a cycle at p_as_of, read-only. The reaper's
-- _reap_phase claims them and messenger.preview_call_timeouts lists them, so the preview shows
-- what the next cycle closes (except calls another transaction holds, which the claim skips).
--   status       the phase's status (messenger.call_reaper_phases()); an unknown p_phase
--                raises 22023
--   cutoff       a call is due when messenger.call_due_key(...) <= cutoff = p_as_of - p_timeout
--   fresh_from   fresh lane: due keys after fresh_from = cutoff - p_fresh, up to cutoff
--   backlog_key, backlog_id  backlog lane: (due key, call_id) from here, up to fresh_from
--   backlog_empty  nothing but quarantined calls up to fresh_from: the backlog lane is not run
--   quarantined  the quarantine has a row at all (the lanes must leave its calls out)
--   retry_due    a quarantined call of this phase is past its backoff (the retry lane runs)
--   floor_stored  a claim floor row exists; floor_key, floor_id  its position if it passed the
--                checks below (NULL otherwise), whether it was swept since a full lane set it
--                (floor_swept) and how many calls the backlog lanes closed from it (floor_passed)
--   over_quarantine  the phase has 16 quarantined calls or more: the backlog start is moved
--                over them, and a floor is kept there
--   floor_reset_at  when the floor started (p_as_of for a new one); vacuums: call_sessions'
--                VACUUM count now, for the floor _reap_phase writes
-- The backlog lane starts at the phase's claim floor (messenger.call_reaper_claim_floor) when
-- the floor passes every check, each one row or one index probe:
--   * p_as_of is later than the as_of of the cycle that set it, or equal when p_after_run is
--     that cycle (the next cycle of the same drain or catch-up loop): a test or a DBA repeating
--     an as_of may have written calls below it at that very instant;
--   * p_as_of is less than p_backoff_max past the floor's reset_at;
--   * the call it stops at still exists (TRUNCATE, DELETE or a restore removed it);
--   * call_sessions has not been vacuumed since (VACUUM removed the dead entries it steps over).
-- Otherwise the lane starts at the beginning ('-infinity', c_uuid_max). While this phase has
-- 16 quarantine rows or more the start then moves over the quarantined calls that follow it: to the
-- first healthy or row-locked call up to fresh_from, or with none, to the last call before
-- fresh_from (never fresh_from itself: a call committed late with an older key would be
-- passed over), so the next cycle does not walk them again.
-- Why shaped so: docs/design.md, "Claiming".
CREATE OR REPLACE FUNCTION messenger._reap_lanes(
    p_phase          text,
    p_as_of          timestamptz,
    p_timeout        interval,
    p_fresh          interval,
    p_backoff_max    interval,
    p_after_run      uuid,
    OUT status       text,
    OUT cutoff       timestamptz,
    OUT fresh_from   timestamptz,
    OUT backlog_key  timestamptz,
    OUT backlog_id   uuid,
    OUT backlog_empty boolean,
    OUT quarantined  boolean,
    OUT retry_due    boolean,
    OUT floor_stored boolean,
    OUT floor_key    timestamptz,
    OUT floor_id     uuid,
    OUT floor_swept  boolean,
    OUT floor_passed bigint,
    OUT over_quarantine boolean,
    OUT floor_reset_at timestamptz,
    OUT vacuums      bigint)
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET enable_sort = off
SET jit = off
AS $$
DECLARE
    -- Paired with the all-ones uuid, a due key k bounds a range to the keys after k from below
    -- ((key, id) >= (k, c_uuid_max)) and to the keys up to k from above: the fresh and the
    -- backlog lanes never share a call, and ('-infinity', c_uuid_max) is "no floor".
    c_uuid_max    constant uuid := 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid;
    c_many_quarantined constant integer := 16;
    v_status      messenger.call_sessions.status%TYPE;
    v_next_retry  timestamptz;
    v_next_other  timestamptz;
    v_floor       messenger.call_reaper_claim_floor;
    v_key         timestamptz;
    v_id          uuid;
    v_healthy     boolean;
    v_trusted     boolean;
BEGIN
    SELECT r.status INTO status FROM messenger.call_reaper_phases() AS r WHERE r.phase = p_phase;
    IF status IS NULL THEN
        RAISE EXCEPTION 'unknown reaper phase %', p_phase USING ERRCODE = '22023';
    END IF;
    v_status := status;
    cutoff := p_as_of - p_timeout;
    fresh_from := cutoff - p_fresh;

    -- Each min() reads one entry of ix_call_reaper_quarantine_due (an EXISTS was planned as a
    -- scan of the whole quarantine, dead pages included).
    SELECT (SELECT min(q.next_attempt_at) FROM messenger.call_reaper_quarantine AS q WHERE q.phase = p_phase),
           (SELECT min(q.next_attempt_at) FROM messenger.call_reaper_quarantine AS q
             WHERE q.phase = (SELECT r.phase FROM messenger.call_reaper_phases() AS r WHERE r.phase <> p_phase)),
           (SELECT coalesce(sum(pg_catalog.pg_stat_get_vacuum_count(t.relid)
                                + pg_catalog.pg_stat_get_autovacuum_count(t.relid)), 0)::bigint
              FROM (SELECT 'messenger.call_sessions'::regclass AS relid   -- a plain table (no tree)
                    UNION
                    SELECT p.relid FROM pg_catalog.pg_partition_tree('messenger.call_sessions'::regclass) AS p
                     WHERE p.isleaf) AS t)
      INTO v_next_retry, v_next_other, vacuums;
    quarantined := v_next_retry IS NOT NULL OR v_next_other IS NOT NULL;
    retry_due := v_next_retry <= p_as_of;

    SELECT * INTO v_floor FROM messenger.call_reaper_claim_floor AS f WHERE f.phase = p_phase;
    floor_stored := FOUND;
    v_trusted := floor_stored
        AND (p_as_of > v_floor.as_of OR (p_as_of = v_floor.as_of AND v_floor.run_id = p_after_run))
        AND p_as_of < v_floor.reset_at + p_backoff_max
        AND v_floor.vacuums = vacuums
        AND EXISTS (SELECT FROM messenger.call_sessions AS s
                     WHERE s.call_id = v_floor.call_id AND s.started_at = v_floor.anchor_started_at);
    IF v_trusted THEN
        floor_key := v_floor.due_key;
        floor_id := v_floor.call_id;
        floor_swept := v_floor.swept;
        floor_passed := v_floor.passed;
        backlog_key := v_floor.due_key;
        backlog_id := v_floor.call_id;
        floor_reset_at := v_floor.reset_at;
    ELSE
        backlog_key := '-infinity';
        backlog_id := c_uuid_max;
        floor_reset_at := p_as_of;
    END IF;
    backlog_empty := false;
    over_quarantine := false;

    -- A few quarantined calls cost the lanes a few probes each cycle; 16 or more are stepped
    -- over, and the floor kept past them (the count reads at most 16 index entries; a trusted
    -- floor is kept anyway).
    IF v_next_retry IS NOT NULL
       AND (v_trusted OR (SELECT count(*) FROM (SELECT FROM messenger.call_reaper_quarantine AS q
                                   WHERE q.phase = p_phase LIMIT c_many_quarantined) AS x) = c_many_quarantined) THEN
        over_quarantine := true;
        -- The first healthy (or row-locked) call from the start; with none up to fresh_from, the
        -- last call before it. The second branch runs only when the first finds nothing.
        SELECT x.due_key, x.call_id, x.healthy INTO v_key, v_id, v_healthy
          FROM ((SELECT k.due_key, s.call_id, true AS healthy
                   FROM messenger.call_sessions AS s
                  CROSS JOIN LATERAL (SELECT messenger.call_due_key(s.status, s.started_at, s.updated_at)) AS k (due_key)
                  WHERE s.status = v_status
                    AND (k.due_key, s.call_id) >= (backlog_key, backlog_id)
                    AND k.due_key <= fresh_from
                    AND NOT EXISTS (SELECT FROM messenger.call_reaper_quarantine AS q WHERE q.call_id = s.call_id)
                  ORDER BY k.due_key, s.call_id
                  LIMIT 1)
                UNION ALL
                (SELECT k.due_key, s.call_id, false
                   FROM messenger.call_sessions AS s
                  CROSS JOIN LATERAL (SELECT messenger.call_due_key(s.status, s.started_at, s.updated_at)) AS k (due_key)
                  WHERE s.status = v_status
                    AND (k.due_key, s.call_id) >= (backlog_key, backlog_id)
                    AND k.due_key <= fresh_from
                  ORDER BY k.due_key DESC, s.call_id DESC
                  LIMIT 1)) AS x
         LIMIT 1;
        IF FOUND THEN
            backlog_empty := NOT v_healthy;
            backlog_key := v_key;
            backlog_id := v_id;
        END IF;
    END IF;
END
$$;

COMMENT ON FUNCTION messenger._reap_lanes(text, timestamptz, interval, interval, interval, uuid) IS
    'Private: where one reaper phase''s retry, fresh and backlog lanes lie at an as_of (the claim floor checked first); read by the claim and the preview.';
REVOKE ALL ON FUNCTION messenger._reap_lanes(text, timestamptz, interval, interval, interval, uuid) FROM PUBLIC;
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER FUNCTION messenger._reap_lanes(text, timestamptz, interval, interval, interval, uuid)
    OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;

COMMIT;
