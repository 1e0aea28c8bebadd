-- Deploy call_timeout_reaper:functions/_call_reaper_quarantine_released to pg

BEGIN;

-- messenger._call_reaper_quarantine_released()  (trigger function of messenger.call_reaper_quarantine)
--
-- Contract: keeps the claim floor's invariant (tables/call_reaper_claim_floor) when a call
-- leaves the quarantine. AFTER DELETE of a quarantine row whose call is still active in a phase
-- (the phase's status, messenger.call_reaper_phases()) and lies below that phase's floor, it
-- deletes that phase's floor row, so the next cycle's claim starts from the bottom of
-- ix_call_due and takes the released call. AFTER TRUNCATE it deletes every floor row. Deleting
-- a floor row is always safe: it only costs the next cycle one walk over the quarantined calls.
-- The floors of another pair (messenger._reap_pair: a Citus worker's shard pairs) all go on any
-- release, since the quarantine does not say which relation holds the call: each such pair's
-- next cycle walks its range from the start once. Releases are rare (a poison call closed or
-- moved on, or a DBA's DELETE).
-- The floor's other rules have one home each: when a cycle trusts it, messenger._reap_floor_trusted;
-- where it stops, whether it is kept or swept and its write, messenger._reap_save_floor.
-- Locks: the deleted floor rows.
-- SECURITY DEFINER (owner messenger_call_reaper_owner): a DBA allowed to release quarantined
-- calls need not hold rights on the floor or the calls. EXECUTE revoked from PUBLIC.
CREATE OR REPLACE FUNCTION messenger._call_reaper_quarantine_released()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        DELETE FROM messenger.call_reaper_claim_floor;
        RETURN NULL;
    END IF;
    -- Another pair's floors (the shard pairs of a Citus worker, which share its quarantine by
    -- call_id): which of their relations holds the call is not looked up, so every one goes.
    DELETE FROM messenger.call_reaper_claim_floor AS f WHERE f.calls <> 'messenger.call_sessions'::regclass;
    -- The default pair's. Not where call_sessions is distributed: no default pair runs there,
    -- and Citus refuses a join of it with a local table.
    IF NOT messenger._call_reaper_distributed() THEN
        -- status::text: the product's column may be an enum; one call, probed by its key.
        DELETE FROM messenger.call_reaper_claim_floor AS f
         USING messenger.call_sessions AS c, messenger.call_reaper_phases() AS p
         WHERE c.call_id = OLD.call_id
           AND f.calls = 'messenger.call_sessions'::regclass
           AND p.phase = f.phase
           AND c.status::text = p.status
           AND (c.started_at, c.call_id) < (f.due_key, f.call_id);   -- a floor is a position of ix_call_due
    END IF;
    RETURN NULL;
END
$$;

REVOKE ALL ON FUNCTION messenger._call_reaper_quarantine_released() FROM PUBLIC;
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER FUNCTION messenger._call_reaper_quarantine_released() OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;

COMMIT;
