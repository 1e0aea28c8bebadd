-- Verify call_timeout_reaper:triggers/call_reaper_quarantine_released on pg

BEGIN;

DO $$
BEGIN
    IF (SELECT count(*) FROM pg_catalog.pg_trigger
         WHERE tgrelid = 'messenger.call_reaper_quarantine'::regclass
           AND tgname IN ('call_reaper_quarantine_released', 'call_reaper_quarantine_truncated')
           AND tgfoid = 'messenger._call_reaper_quarantine_released()'::regprocedure) <> 2 THEN
        RAISE EXCEPTION 'the quarantine triggers that reset the claim floor are missing';
    END IF;
END
$$;

ROLLBACK;
