-- Deploy call_timeout_reaper:functions/_reap_lanes to pg

BEGIN;

-- Contract: where one phase's lanes lie for a cycle at p_run.as_of, read-only. The reaper's
-- _reap_claim claims them and messenger.preview_call_timeouts lists them, so the preview shows
-- what the next cycle closes (except calls another transaction holds, which the claim skips).
-- Returns a messenger.call_reaper_lanes row (its fields are described there); an unknown
-- p_run.phase raises 22023. cutoff = p_run.as_of - p_run.timeout, fresh_from = cutoff - p_run.fresh.
-- The backlog lane starts at the phase's claim floor (messenger.call_reaper_claim_floor) when
-- messenger._reap_floor_trusted says a cycle may trust it (checks (a)-(e) live there).
-- Otherwise the lane starts at the beginning ('-infinity', c_uuid_max). While this phase has
-- 16 quarantine rows or more the start then moves over the quarantined calls that follow it: to the
-- first healthy or row-locked call (due or still talking) up to fresh_from, or with none, to the last due call
-- before fresh_from (never fresh_from itself: a call committed late with an older key would be
-- passed over), so the next cycle does not walk them again. Lanes are ranges of ix_call_due's
-- key (started_at, call_id); a call in them is due by messenger.call_is_due at the cutoff.
-- p_run.calls is the pair's calls relation: messenger.call_sessions runs the static statements;
-- another relation of its shape runs the same walk through EXECUTE; each pair keeps its own
-- claim floor (keyed by its calls relation and the phase), its VACUUM count its calls relation's.
-- Why shaped so: docs/design.md, "Claiming".
CREATE FUNCTION messenger._reap_lanes(p_run messenger.call_reaper_phase_run)
RETURNS messenger.call_reaper_lanes
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
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
    l             messenger.call_reaper_lanes;
BEGIN
    SELECT r.status INTO l.status FROM messenger.call_reaper_phases() AS r WHERE r.phase = p_run.phase;
    IF l.status IS NULL THEN
        RAISE EXCEPTION 'unknown reaper phase %', p_run.phase USING ERRCODE = '22023';
    END IF;
    v_status := l.status;
    l.cutoff := p_run.as_of - p_run.timeout;
    l.fresh_from := l.cutoff - p_run.fresh;

    -- Each min() reads one entry of ix_call_reaper_quarantine_due (an EXISTS was planned as a
    -- scan of the whole quarantine, dead pages included). The VACUUM count is summed over the
    -- relation and every partition below it, found in pg_inherits, which locks nothing:
    -- pg_partition_tree() takes a lock on each partition and none on the parent, the reverse
    -- of the order the product's DETACH PARTITION locks them in (parent first), and the cycle's
    -- next statement on the parent then deadlocked with it.
    SELECT (SELECT min(q.next_attempt_at) FROM messenger.call_reaper_quarantine AS q WHERE q.phase = p_run.phase),
           (SELECT min(q.next_attempt_at) FROM messenger.call_reaper_quarantine AS q
             WHERE q.phase = (SELECT r.phase FROM messenger.call_reaper_phases() AS r WHERE r.phase <> p_run.phase)),
           (WITH RECURSIVE tree (relid) AS (
                SELECT p_run.calls::oid
                UNION ALL
                SELECT i.inhrelid FROM pg_catalog.pg_inherits AS i JOIN tree AS t ON i.inhparent = t.relid)
            SELECT coalesce(sum(pg_catalog.pg_stat_get_vacuum_count(t.relid)
                                + pg_catalog.pg_stat_get_autovacuum_count(t.relid)), 0)::bigint
              FROM tree AS t)
      INTO v_next_retry, v_next_other, l.vacuums;
    l.quarantined := v_next_retry IS NOT NULL OR v_next_other IS NOT NULL;
    l.retry_due := v_next_retry <= p_run.as_of;

    -- Each pair its own floor: a position in its calls relation.
    SELECT * INTO v_floor FROM messenger.call_reaper_claim_floor AS f
     WHERE f.calls = p_run.calls AND f.phase = p_run.phase;
    l.floor_stored := FOUND;
    v_trusted := messenger._reap_floor_trusted(p_run, v_floor, l.vacuums);
    IF v_trusted THEN
        l.floor_key := v_floor.due_key;
        l.floor_id := v_floor.call_id;
        l.floor_swept := v_floor.swept;
        l.floor_passed := v_floor.passed;
        l.backlog_key := v_floor.due_key;
        l.backlog_id := v_floor.call_id;
        l.floor_reset_at := v_floor.reset_at;
        l.floor_talking_since := v_floor.talking_since;
    ELSE
        l.backlog_key := '-infinity';
        l.backlog_id := c_uuid_max;
        l.floor_reset_at := p_run.as_of;
    END IF;
    l.backlog_empty := false;
    l.over_quarantine := false;

    -- A few quarantined calls cost the lanes a few probes each cycle; 16 or more are stepped
    -- over, and the floor kept past them (the count reads at most 16 index entries; a trusted
    -- floor is kept anyway).
    IF v_next_retry IS NOT NULL
       AND (v_trusted OR (SELECT count(*) FROM (SELECT FROM messenger.call_reaper_quarantine AS q
                                   WHERE q.phase = p_run.phase LIMIT c_many_quarantined) AS x) = c_many_quarantined) THEN
        l.over_quarantine := true;
        -- The first healthy (or row-locked) call from the start; with none up to fresh_from, the
        -- last call before it. The second branch runs only when the first finds nothing. Due or
        -- not: every Ringing call up to fresh_from is due, and an Answered one still talking is
        -- where the step stops, so the backlog lane walks it and the floor's talking_since
        -- counts it (stepped over, it would be hidden below the floor uncounted).
        IF p_run.calls = 'messenger.call_sessions'::regclass THEN
        -- pair: first healthy
        SELECT x.due_key, x.call_id, x.healthy
          INTO v_key, v_id, v_healthy
          FROM ((SELECT s.started_at AS due_key, s.call_id, true AS healthy
                   FROM messenger.call_sessions AS s
                  WHERE s.status = v_status
                    AND s.status IN ('Ringing', 'Answered')   -- the claim index's predicate, for a generic plan
                    AND s.started_at >= l.backlog_key + CASE WHEN l.backlog_id = c_uuid_max THEN interval '1 microsecond' ELSE interval '0' END
                    AND s.started_at <= l.fresh_from
                    AND NOT EXISTS (SELECT FROM messenger.call_reaper_quarantine AS q WHERE q.call_id = s.call_id)
                  ORDER BY s.started_at
                  LIMIT 1)
                UNION ALL
                (SELECT s.started_at, s.call_id, false
                   FROM messenger.call_sessions AS s
                  WHERE s.status = v_status
                    AND s.status IN ('Ringing', 'Answered')   -- the claim index's predicate, for a generic plan
                    AND s.started_at >= l.backlog_key + CASE WHEN l.backlog_id = c_uuid_max THEN interval '1 microsecond' ELSE interval '0' END
                    AND s.started_at <= l.fresh_from
                  ORDER BY s.started_at DESC
                  LIMIT 1)) AS x
         LIMIT 1;
        ELSE
            -- Another pair's calls relation: the same statement, planned per call.
            EXECUTE messenger._reap_pair_sql('messenger._reap_lanes', 'first healthy', p_run.calls, NULL,
                                             'v_status', 'l.backlog_key', 'l.backlog_id', 'l.fresh_from', 'c_uuid_max')
               INTO v_key, v_id, v_healthy
              USING v_status, l.backlog_key, l.backlog_id, l.fresh_from, c_uuid_max;
        END IF;
        -- EXECUTE sets no FOUND; started_at is never NULL.
        IF v_key IS NOT NULL THEN
            l.backlog_empty := NOT v_healthy;
            l.backlog_key := v_key;
            l.backlog_id := v_id;
        END IF;
    END IF;
    RETURN l;
END
$$;

COMMENT ON FUNCTION messenger._reap_lanes(messenger.call_reaper_phase_run) IS
    'Private: where one reaper phase''s retry, fresh and backlog lanes lie at an as_of (the claim floor checked first); read by the claim and the preview.';
REVOKE ALL ON FUNCTION messenger._reap_lanes(messenger.call_reaper_phase_run) FROM PUBLIC;
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER FUNCTION messenger._reap_lanes(messenger.call_reaper_phase_run)
    OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;

COMMIT;
