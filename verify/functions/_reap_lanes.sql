-- Verify call_timeout_reaper:functions/_reap_lanes on pg

BEGIN;

DO $$
BEGIN
    IF (SELECT p.prorettype FROM pg_catalog.pg_proc AS p
         WHERE p.oid = 'messenger._reap_lanes(messenger.call_reaper_phase_run)'::regprocedure)
       <> 'messenger.call_reaper_lanes'::regtype THEN
        RAISE EXCEPTION 'messenger._reap_lanes must return messenger.call_reaper_lanes';
    END IF;
END
$$;

ROLLBACK;
