-- Deploy call_timeout_reaper:functions/_reap_claim_retries to pg

BEGIN;

-- Contract: the retry lane of a phase: claims, FOR NO KEY UPDATE SKIP LOCKED, the quarantined
-- calls of p_phase whose backoff expired by p_as_of, oldest next_attempt_at first, at most
-- p_share of them, that are still due (status p_status, messenger.call_is_due at p_cutoff);
-- returns them in started_at order, with the instant each one's window counted from
-- (messenger.call_due_key, for the close's lag). The quarantine rows it reads whose call is no
-- longer due in this phase (closed, answered, progressed, gone) are deleted in the same
-- statement: the quarantine cleans itself up as backoffs expire, reading only rows it looks at
-- anyway.
-- Reworked after v1.2.0: "still due" is messenger.call_is_due (started_at, and updated_at for
-- an Answered call), the rule the other lanes claim by.
CREATE OR REPLACE FUNCTION messenger._reap_claim_retries(
    p_phase     text,
    p_status    text,
    p_as_of     timestamptz,
    p_cutoff    timestamptz,
    p_share     integer,
    OUT ids     uuid[],
    OUT started timestamptz[],
    OUT keys    timestamptz[])
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET jit = off
AS $$
DECLARE
    v_status messenger.call_sessions.status%TYPE := p_status;   -- text, varchar or the enum
BEGIN
    WITH expired AS (
        SELECT q.call_id FROM messenger.call_reaper_quarantine AS q
         WHERE q.phase = p_phase AND q.next_attempt_at <= p_as_of
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
END
$$;

COMMENT ON FUNCTION messenger._reap_claim_retries(text, text, timestamptz, timestamptz, integer) IS
    'Private: claim the quarantined calls of a reaper phase whose backoff expired, deleting the rows of calls no longer due.';
REVOKE ALL ON FUNCTION messenger._reap_claim_retries(text, text, timestamptz, timestamptz, integer) FROM PUBLIC;
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER FUNCTION messenger._reap_claim_retries(text, text, timestamptz, timestamptz, integer)
    OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;

COMMIT;
