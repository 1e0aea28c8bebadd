-- Deploy call_timeout_reaper:functions/_reap_claim_lane to pg

BEGIN;

-- Contract: claims one healthy lane of a phase, FOR NO KEY UPDATE SKIP LOCKED (a call held by
-- answer-call/end-call is skipped, never waited for; NO KEY UPDATE because FOR UPDATE conflicts
-- with the KEY SHARE locks that inserts of child rows take through a foreign key): at most
-- p_limit calls of the phase's status due at its cutoff (p_lanes, messenger._reap_lanes' row:
-- status, cutoff, quarantined; messenger.call_is_due) in the range
-- p_lo_key .. p_hi_key of started_at of the claims' index (messenger._call_reaper_claim_indexes:
-- the product's own of active calls, or ix_call_due), not in p_taken (claimed by an earlier
-- lane), not quarantined when the quarantine has a row, in the index's order. A range is whole started_at
-- groups: it starts at the first call of p_lo_key (after its last when p_lo_id is the max uuid)
-- and ends with the last call of p_hi_key (before its first unless p_hi_id is the max uuid);
-- within a group the index's own order, call_id on ix_call_due, the heap's on the product's
-- index (which has no call_id), so that a lane never reads a group past its limit.
-- Returns them (ids, started, keys: the instant each one's window counted from,
-- messenger.call_due_key, for the close's lag; in (started_at, call_id) order), where the walk
-- stopped (upto: the last claimed call of a full lane, the range's end otherwise) and skipped:
-- the healthy due calls it passed because another transaction held them (or changed them after
-- the snapshot) up to there, the group upto_key excluded when the lane is full (its calls not
-- claimed are walked again by the next lane or cycle, which starts at that group's first call),
-- talkers: the calls up to there it walked that are not due (Answered calls still talking; a
-- Ringing lane has none), and talking_since: the earliest updated_at among those (NULL for
-- none), which messenger._reap_save_floor keeps with a stale-answered floor.
-- A Ringing lane reads only due calls (its range ends at or before the cutoff); an Answered
-- lane also steps over the answered calls that started before the range's end and are still
-- talking (updated_at after the cutoff): the price of a key that a progress update never
-- changes. The claim and the count are one statement, so both read one snapshot; the count
-- walks the claim's range in the claim's order (unordered, the planner would scan partitions by
-- bitmap or sequentially instead). pgTAP claim_*_plan and idle_cycle_reads_no_live_rows hold
-- both to a range scan of that index (ix_call_active and ix_call_due alike) that stops at the
-- range's end or the limit; claim_equal_started_at holds a lane that starts inside a group
-- of one started_at to the calls it claims, not the group.
-- The count walks the range once, due or not (each entry's heap row is read for updated_at
-- either way), so the talkers cost it nothing more.
-- p_calls is the calls relation of the cycle's pair (messenger._reap_pair): messenger.call_sessions
-- runs the static statement; another relation of its shape runs the same text through EXECUTE.
CREATE FUNCTION messenger._reap_claim_lane(
    p_lanes       messenger.call_reaper_lanes,
    p_lo_key      timestamptz,
    p_lo_id       uuid,
    p_hi_key      timestamptz,
    p_hi_id       uuid,
    p_taken       uuid[],
    p_limit       integer,
    p_calls       regclass,
    OUT ids       uuid[],
    OUT started   timestamptz[],
    OUT keys      timestamptz[],
    OUT upto_key  timestamptz,
    OUT upto_id   uuid,
    OUT skipped   integer,
    OUT talkers   integer,
    OUT talking_since timestamptz)
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
-- FOR UPDATE needs VOLATILE (PostgreSQL refuses it in a STABLE function), which plpgsql_check
-- does not see: @plpgsql_check_options: performance_warnings = false
DECLARE
    v_status messenger.call_sessions.status%TYPE := p_lanes.status;   -- text, varchar or the enum
    -- The range in started_at: whole groups. A bound's id past every call (the max uuid) takes
    -- in the hi group and leaves out the lo one; any other id the other way round. timestamptz
    -- counts microseconds, so "after k" is ">= k + 1 µs": a bound the index can seek to.
    c_after  constant uuid := 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid;
    v_from   constant timestamptz := p_lo_key + CASE WHEN p_lo_id = c_after THEN interval '1 microsecond' ELSE interval '0' END;
    v_to     constant timestamptz := p_hi_key - CASE WHEN p_hi_id = c_after THEN interval '0' ELSE interval '1 microsecond' END;
BEGIN
    -- The default pair: this static statement, whose generic plan the session keeps.
    IF p_calls = 'messenger.call_sessions'::regclass THEN
    -- pair: claim
    WITH claimed AS MATERIALIZED (
        SELECT s.call_id, s.started_at, messenger.call_due_key(s.status, s.started_at, s.updated_at) AS due_key
          FROM messenger.call_sessions AS s
         WHERE s.status = v_status
           AND messenger.call_is_due(s.status, s.started_at, s.updated_at, p_lanes.cutoff)
           AND s.started_at >= v_from AND s.started_at <= v_to
           AND s.call_id <> ALL (p_taken)
           AND (NOT p_lanes.quarantined OR NOT EXISTS (SELECT FROM messenger.call_reaper_quarantine AS q WHERE q.call_id = s.call_id))
         ORDER BY s.started_at
         LIMIT p_limit
           FOR NO KEY UPDATE OF s SKIP LOCKED
    ), batch AS (
        SELECT coalesce(array_agg(c.call_id ORDER BY c.started_at, c.call_id), '{}') AS ids,
               coalesce(array_agg(c.started_at ORDER BY c.started_at, c.call_id), '{}') AS started,
               coalesce(array_agg(c.due_key ORDER BY c.started_at, c.call_id), '{}') AS keys
          FROM claimed AS c
    ), bound AS (
        SELECT b.*,
               CASE WHEN cardinality(b.ids) < p_limit THEN p_hi_key ELSE b.started[p_limit] END AS upto_key,
               CASE WHEN cardinality(b.ids) < p_limit THEN p_hi_id ELSE b.ids[p_limit] END AS upto_id,
               CASE WHEN cardinality(b.ids) < p_limit THEN v_to ELSE b.started[p_limit] - interval '1 microsecond' END AS walked_to
          FROM batch AS b
    )
    SELECT b.ids, b.started, b.keys, b.upto_key, b.upto_id,
           w.due - (SELECT count(*) FROM unnest(b.started) AS u (started_at) WHERE u.started_at <= b.walked_to)::integer,
           w.talkers, w.talking_since
      INTO ids, started, keys, upto_key, upto_id, skipped, talkers, talking_since
      FROM bound AS b
     CROSS JOIN LATERAL
           (SELECT count(*) FILTER (WHERE x.due)::integer AS due,
                   count(*) FILTER (WHERE NOT x.due)::integer AS talkers,
                   min(x.updated_at) FILTER (WHERE NOT x.due) AS talking_since
              FROM (SELECT messenger.call_is_due(s.status, s.started_at, s.updated_at, p_lanes.cutoff) AS due, s.updated_at
                      FROM messenger.call_sessions AS s
                     WHERE s.status = v_status
                       AND s.status IN ('Ringing', 'Answered')   -- the claim index's predicate, for a generic plan
                       AND s.started_at <= p_lanes.cutoff
                       AND s.started_at >= v_from AND s.started_at <= b.walked_to
                       AND s.call_id <> ALL (p_taken)
                       -- A call still talking is counted without a quarantine probe (counting a
                       -- quarantined one only makes talking_since earlier). OFFSET 0 keeps the
                       -- probe per row: hashed, it would read the whole quarantine each time.
                       AND (NOT p_lanes.quarantined
                            OR NOT messenger.call_is_due(s.status, s.started_at, s.updated_at, p_lanes.cutoff)
                            OR NOT EXISTS (SELECT FROM messenger.call_reaper_quarantine AS q WHERE q.call_id = s.call_id OFFSET 0))
                     ORDER BY s.started_at) AS x) AS w;
    ELSE
        -- Another pair's calls relation: the same statement, planned per call.
        EXECUTE messenger._reap_pair_sql('messenger._reap_claim_lane', 'claim', p_calls, NULL,
                                         'v_status', 'p_lanes.cutoff', 'v_from', 'v_to', 'p_hi_key', 'p_hi_id',
                                         'p_taken', 'p_lanes.quarantined', 'p_limit')
           INTO ids, started, keys, upto_key, upto_id, skipped, talkers, talking_since
          USING v_status, p_lanes.cutoff, v_from, v_to, p_hi_key, p_hi_id, p_taken, p_lanes.quarantined, p_limit;
    END IF;
    skipped := greatest(skipped, 0);
END
$$;

COMMENT ON FUNCTION messenger._reap_claim_lane(messenger.call_reaper_lanes, timestamptz, uuid, timestamptz, uuid, uuid[], integer, regclass) IS
    'Private: claim one healthy lane of a reaper phase with SKIP LOCKED, and count the calls it passed.';
REVOKE ALL ON FUNCTION messenger._reap_claim_lane(messenger.call_reaper_lanes, timestamptz, uuid, timestamptz, uuid, uuid[], integer, regclass) FROM PUBLIC;
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER FUNCTION messenger._reap_claim_lane(messenger.call_reaper_lanes, timestamptz, uuid, timestamptz, uuid, uuid[], integer, regclass)
    OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;

COMMIT;
