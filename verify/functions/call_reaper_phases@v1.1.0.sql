-- Verify call_timeout_reaper:functions/call_reaper_phases on pg

BEGIN;

DO $$
BEGIN
    IF (SELECT count(*) FROM messenger.call_reaper_phases()) <> 2 THEN
        RAISE EXCEPTION 'messenger.call_reaper_phases() must return one row per phase';
    END IF;
END
$$;

ROLLBACK;
