-- Deploy call_timeout_reaper:functions/_reap_claim_retries to pg

BEGIN;

-- Contract: the retry lane of a phase: claims, FOR NO KEY UPDATE SKIP LOCKED, the quarantined
-- calls of p_phase whose backoff expired by p_as_of, oldest next_attempt_at first, at most
-- p_share of them, that are still due (status p_status, messenger.call_is_due at p_cutoff);
-- returns them in started_at order, with the instant each one's window counted from
-- (messenger.call_due_key, for the close's lag). The quarantine rows it reads whose call is no
-- longer due in this phase (closed, answered, progressed, gone) are deleted in the same
-- statement: the quarantine cleans itself up as backoffs expire, reading only rows it looks at
-- anyway. p_calls is the calls relation of the cycle's pair (messenger._reap_pair):
-- messenger.call_sessions runs the static statement; another relation of its shape runs the same
-- text through EXECUTE. The quarantine is shared and keyed by call_id, so a pair that is not the
-- whole call_sessions (a shard) reads only the rows of calls it holds: another pair's rows are
-- neither claimed nor deleted as gone by it, and a row whose call left every pair stays until
-- the default pair runs (the quarantine size in the metrics leaves such rows out).
CREATE FUNCTION messenger._reap_claim_retries(
    p_phase     text,
    p_status    text,
    p_as_of     timestamptz,
    p_cutoff    timestamptz,
    p_share     integer,
    p_calls     regclass,
    OUT ids     uuid[],
    OUT started timestamptz[],
    OUT keys    timestamptz[])
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_status messenger.call_sessions.status%TYPE := p_status;   -- text, varchar or the enum
    -- The default pair holds every call: a quarantine row whose call it lacks is gone. Another
    -- pair (a shard) holds some: it reads only the rows of its own calls.
    v_whole  constant boolean := p_calls = 'messenger.call_sessions'::regclass;
BEGIN
    -- The default pair: this static statement, whose generic plan the session keeps.
    IF v_whole THEN
    -- pair: retries
    WITH expired AS (
        SELECT q.call_id FROM messenger.call_reaper_quarantine AS q
         WHERE q.phase = p_phase AND q.next_attempt_at <= p_as_of
           AND (v_whole OR EXISTS (SELECT FROM messenger.call_sessions AS s WHERE s.call_id = q.call_id))
         ORDER BY q.next_attempt_at, q.call_id
         LIMIT p_share
    ), gone AS (
        DELETE FROM messenger.call_reaper_quarantine AS q
         USING expired AS e
         WHERE q.call_id = e.call_id
           AND NOT EXISTS (SELECT FROM messenger.call_sessions AS s
                            WHERE s.call_id = e.call_id AND s.status = v_status
                              AND messenger.call_is_due(s.status, s.started_at, s.updated_at, p_cutoff))
    ), claimed AS MATERIALIZED (
        SELECT s.call_id, s.started_at, messenger.call_due_key(s.status, s.started_at, s.updated_at) AS due_key
          FROM messenger.call_sessions AS s
         WHERE s.call_id = ANY (ARRAY(SELECT e.call_id FROM expired AS e))  -- primary-key probes
           AND s.status = v_status AND messenger.call_is_due(s.status, s.started_at, s.updated_at, p_cutoff)
           FOR NO KEY UPDATE OF s SKIP LOCKED
    )
    SELECT coalesce(array_agg(c.call_id ORDER BY c.started_at, c.call_id), '{}'),
           coalesce(array_agg(c.started_at ORDER BY c.started_at, c.call_id), '{}'),
           coalesce(array_agg(c.due_key ORDER BY c.started_at, c.call_id), '{}')
      INTO ids, started, keys
      FROM claimed AS c;
    ELSE
        -- Another pair's calls relation: the same statement, planned per call.
        EXECUTE messenger._reap_pair_sql('messenger._reap_claim_retries', 'retries', p_calls, NULL,
                                         'p_phase', 'p_as_of', 'p_share', 'v_whole', 'v_status', 'p_cutoff')
           INTO ids, started, keys
          USING p_phase, p_as_of, p_share, v_whole, v_status, p_cutoff;
    END IF;
END
$$;

COMMENT ON FUNCTION messenger._reap_claim_retries(text, text, timestamptz, timestamptz, integer, regclass) IS
    'Private: claim the quarantined calls of a reaper phase whose backoff expired, deleting the rows of calls no longer due.';
REVOKE ALL ON FUNCTION messenger._reap_claim_retries(text, text, timestamptz, timestamptz, integer, regclass) FROM PUBLIC;
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER FUNCTION messenger._reap_claim_retries(text, text, timestamptz, timestamptz, integer, regclass)
    OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;

COMMIT;
