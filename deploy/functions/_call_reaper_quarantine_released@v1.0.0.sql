-- Deploy call_timeout_reaper:functions/_call_reaper_quarantine_released to pg

BEGIN;

-- messenger._call_reaper_quarantine_released()  (trigger function of messenger.call_reaper_quarantine)
--
-- Contract: keeps the claim floor's invariant (tables/call_reaper_claim_floor) when a call
-- leaves the quarantine. AFTER DELETE of a quarantine row whose call is still active in a phase
-- and lies below that phase's floor, it deletes that phase's floor row, so the next cycle's
-- claim starts from the bottom of ix_call_due and takes the released call. AFTER TRUNCATE it
-- deletes every floor row. Deleting a floor row is always safe: it only costs the next cycle
-- one walk over the quarantined calls. Locks: the deleted floor rows.
-- SECURITY DEFINER (owner messenger_call_reaper_owner): a DBA allowed to release quarantined
-- calls need not hold rights on the floor or the calls. EXECUTE revoked from PUBLIC.
CREATE FUNCTION messenger._call_reaper_quarantine_released()
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
    DELETE FROM messenger.call_reaper_claim_floor AS f
     USING messenger.call_sessions AS c
     WHERE c.call_id = OLD.call_id
       AND c.status::text = CASE f.phase WHEN 'ring_timeout' THEN 'Ringing' ELSE 'Answered' END
       AND (messenger.call_due_key(c.status, c.started_at, c.updated_at), c.call_id) < (f.due_key, f.call_id);
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
