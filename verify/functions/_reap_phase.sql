-- Verify call_timeout_reaper:functions/_reap_phase on pg
-- That it exists (the cast raises otherwise) and is the reworked one, whose full backlog lanes
-- move the claim floor (only it ever deletes a floor row); its grants: tests/pgtap/privileges.sql.

BEGIN;

DO $$
BEGIN
    IF strpos(pg_catalog.pg_get_functiondef('messenger._reap_phase(text, uuid, timestamptz, interval, integer, interval, interval, interval, integer)'::pg_catalog.regprocedure),
              'DELETE FROM messenger.call_reaper_claim_floor') = 0 THEN
        RAISE EXCEPTION 'messenger._reap_phase is not the reworked definition (no drain claim floor)';
    END IF;
END
$$;

ROLLBACK;
