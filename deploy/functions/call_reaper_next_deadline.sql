-- Deploy call_timeout_reaper:functions/call_reaper_next_deadline to pg

BEGIN;

-- messenger.call_reaper_next_deadline(after_as_of timestamptz DEFAULT NULL) RETURNS timestamptz
--
-- The earliest deadline (started_at + ring_timeout) of a Ringing call that is not due at
-- after_as_of, i.e. that a cycle run with that as_of left for later; NULL when there is none.
-- A cycle closes a Ringing call once as_of - started_at >= ring_timeout, so this is the first
-- as_of at which a cycle closes another one: messenger.run_call_reaper_ticks sleeps to it between
-- its polling ticks (settings.wake_at_deadline), scripts/reaper-loop does the same from outside.
-- Pass the last cycle's as_of: the calls already due then (closed, row-locked by answer-call,
-- quarantined as poison, left over by a full batch) are the polling ticks' business, and
-- would otherwise pin the answer in the past. NULL: the earliest of all Ringing calls.
-- Why it is exact and cheap: a deadline never moves earlier (a call inserted later rang later),
-- so the next one is the first entry of ix_call_due's Ringing range past the cutoff: one
-- index probe, no transaction id, nothing written. A call whose inserting transaction started
-- before the probe and committed after it may have an earlier deadline than the one returned:
-- callers probe again at each nap (0.1 s), and the next polling tick closes it in any case.
-- On a Citus coordinator with call_sessions distributed, NULL: a probe would fan out to every
-- shard at each nap, so the fan-out keeps the polling cadence.
-- SECURITY DEFINER: the job role reads no call itself. EXECUTE for the job role and operators.
CREATE FUNCTION messenger.call_reaper_next_deadline(after_as_of timestamptz DEFAULT NULL)
RETURNS timestamptz
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_ring_timeout interval;
BEGIN
    IF messenger._call_reaper_distributed() THEN
        RETURN NULL;
    END IF;
    SELECT s.ring_timeout INTO STRICT v_ring_timeout FROM messenger.call_reaper_settings AS s;
    -- The status as a literal: the column may be the service's enum, and a literal lets the
    -- planner match ix_call_due's partial predicate.
    RETURN (SELECT c.started_at + v_ring_timeout
              FROM messenger.call_sessions AS c
             WHERE c.status = 'Ringing'
               AND c.started_at > coalesce(after_as_of - v_ring_timeout, '-infinity'::timestamptz)
             ORDER BY c.started_at
             LIMIT 1);
END
$$;

COMMENT ON FUNCTION messenger.call_reaper_next_deadline(timestamptz) IS
    'The earliest deadline (started_at + ring_timeout) of a Ringing call not yet due at after_as_of (NULL: of any Ringing call); NULL when there is none or call_sessions is distributed. One index probe.';
REVOKE ALL ON FUNCTION messenger.call_reaper_next_deadline(timestamptz) FROM PUBLIC;
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER FUNCTION messenger.call_reaper_next_deadline(timestamptz) OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;
GRANT EXECUTE ON FUNCTION messenger.call_reaper_next_deadline(timestamptz)
    TO messenger_call_reaper, messenger_call_reaper_operator;

COMMIT;
