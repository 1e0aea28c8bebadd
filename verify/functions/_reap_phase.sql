-- Verify call_timeout_reaper:functions/_reap_phase on pg

BEGIN;

DO $$
BEGIN
    IF NOT coalesce(NOT pg_catalog.has_function_privilege('public',
           'messenger._reap_phase(text, uuid, timestamptz, interval, integer, interval, interval, interval, integer)', 'EXECUTE'), false) THEN
        RAISE EXCEPTION '_reap_phase must not be executable by PUBLIC';
    END IF;
END
$$;

ROLLBACK;
