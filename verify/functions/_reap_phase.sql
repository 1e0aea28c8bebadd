-- Verify call_timeout_reaper:functions/_reap_phase on pg

BEGIN;

DO $$
BEGIN
    ASSERT NOT pg_catalog.has_function_privilege('public',
        'messenger._reap_phase(text, uuid, timestamptz, interval, integer, interval, interval, interval, integer)', 'EXECUTE'),
        '_reap_phase must not be executable by PUBLIC';
END
$$;

ROLLBACK;
