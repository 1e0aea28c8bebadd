-- Revert call_timeout_reaper:functions/_call_reaper_quarantine_released from pg
-- Back to the v1.0.0 body, written out again on purpose: the released deploy script
-- (_call_reaper_quarantine_released@v1.0.0.sql) says CREATE FUNCTION, not OR REPLACE, and the
-- two triggers on the function keep it from being dropped first, so that script cannot be
-- included here. CREATE OR REPLACE keeps the owner, the grants and the triggers.

BEGIN;

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
    DELETE FROM messenger.call_reaper_claim_floor AS f
     USING messenger.call_sessions AS c
     WHERE c.call_id = OLD.call_id
       AND c.status::text = CASE f.phase WHEN 'ring_timeout' THEN 'Ringing' ELSE 'Answered' END
       AND (messenger.call_due_key(c.status, c.started_at, c.updated_at), c.call_id) < (f.due_key, f.call_id);
    RETURN NULL;
END
$$;

COMMIT;
