-- Deploy call_timeout_reaper:functions/_reap_first_passed to pg

BEGIN;

-- Contract: the first healthy call of a phase's status in the ix_call_due range
-- [(p_lo_key, p_lo_id), (p_hi_key, p_hi_id)] of (started_at, call_id) that the claim did not
-- take (not in p_claimed, not quarantined when p_quarantined): where the claim floor must stop
-- after a lane passed row-locked calls. Read in a later snapshot than the claim's, which can
-- only find that call or one committed since, earlier. NULL when there is none any more.
-- Due or not: a Ringing call in that range is always due (the range ends at or before the
-- cutoff); an Answered one may be still talking, and the floor then stops at it, which only
-- puts it lower (p_hi_key is no cutoff for updated_at, so due-ness cannot be tested here).
-- p_calls is the pair's calls relation: messenger.call_sessions runs the static statement,
-- another relation of its shape (a Citus shard) the same text through EXECUTE, for its own floor.
CREATE FUNCTION messenger._reap_first_passed(
    p_status      text,
    p_lo_key      timestamptz,
    p_lo_id       uuid,
    p_hi_key      timestamptz,
    p_hi_id       uuid,
    p_claimed     uuid[],
    p_quarantined boolean,
    p_calls       regclass,
    OUT due_key   timestamptz,
    OUT call_id   uuid)
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_status messenger.call_sessions.status%TYPE := p_status;
    -- Whole started_at groups, as messenger._reap_claim_lane reads its range.
    c_after  constant uuid := 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid;
    v_from   constant timestamptz := p_lo_key + CASE WHEN p_lo_id = c_after THEN interval '1 microsecond' ELSE interval '0' END;
    v_to     constant timestamptz := p_hi_key - CASE WHEN p_hi_id = c_after THEN interval '0' ELSE interval '1 microsecond' END;
BEGIN
    IF p_calls = 'messenger.call_sessions'::regclass THEN
    -- pair: first passed
    SELECT s.started_at, s.call_id
      INTO due_key, call_id
      FROM messenger.call_sessions AS s
     WHERE s.status = v_status
       AND s.status IN ('Ringing', 'Answered')   -- the claim index's predicate, for a generic plan
       AND s.started_at >= v_from AND s.started_at <= v_to
       AND s.call_id <> ALL (p_claimed)
       AND (NOT p_quarantined OR NOT EXISTS (SELECT FROM messenger.call_reaper_quarantine AS q WHERE q.call_id = s.call_id))
     ORDER BY s.started_at
     LIMIT 1;
    ELSE
        -- Another pair's calls relation: the same statement, planned per call.
        EXECUTE messenger._reap_pair_sql('messenger._reap_first_passed', 'first passed', p_calls, NULL,
                                         'v_status', 'v_from', 'v_to', 'p_claimed', 'p_quarantined')
           INTO due_key, call_id
          USING v_status, v_from, v_to, p_claimed, p_quarantined;
    END IF;
END
$$;

COMMENT ON FUNCTION messenger._reap_first_passed(text, timestamptz, uuid, timestamptz, uuid, uuid[], boolean, regclass) IS
    'Private: the first healthy call a reaper lane passed (row-locked by another transaction), where the claim floor stops.';
REVOKE ALL ON FUNCTION messenger._reap_first_passed(text, timestamptz, uuid, timestamptz, uuid, uuid[], boolean, regclass) FROM PUBLIC;
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER FUNCTION messenger._reap_first_passed(text, timestamptz, uuid, timestamptz, uuid, uuid[], boolean, regclass)
    OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;

COMMIT;
