-- Verify call_timeout_reaper:tables/call_reaper_claim_floor on pg

BEGIN;

SELECT phase, due_key, call_id, reset_at FROM messenger.call_reaper_claim_floor WHERE false;

DO $$
BEGIN
    IF (SELECT count(*) FROM pg_catalog.pg_trigger
         WHERE tgrelid = 'messenger.call_reaper_quarantine'::regclass
           AND tgname IN ('call_reaper_quarantine_released', 'call_reaper_quarantine_truncated')) <> 2 THEN
        RAISE EXCEPTION 'the quarantine triggers that reset the claim floor are missing';
    END IF;
END
$$;

ROLLBACK;
