-- Verify call_timeout_reaper:tables/call_reaper_claim_floor on pg

BEGIN;

SELECT phase, due_key, call_id, reset_at FROM messenger.call_reaper_claim_floor WHERE false;

DO $$
BEGIN
    IF NOT pg_catalog.has_table_privilege('messenger_call_reaper_owner', 'messenger.call_reaper_claim_floor', 'DELETE') THEN
        RAISE EXCEPTION 'messenger_call_reaper_owner must keep messenger.call_reaper_claim_floor';
    END IF;
END
$$;

ROLLBACK;
