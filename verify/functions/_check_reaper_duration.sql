-- Verify call_timeout_reaper:functions/_check_reaper_duration on pg

BEGIN;

SELECT messenger._check_reaper_duration('ring_timeout', interval '45 seconds', interval '1 second', interval '1 hour');

DO $$
BEGIN
    BEGIN
        PERFORM messenger._check_reaper_duration('ring_timeout', interval '1 day', interval '1 second', interval '168 hours');
        RAISE EXCEPTION 'a duration with a day part was accepted' USING ERRCODE = 'P0004';
    EXCEPTION WHEN invalid_parameter_value THEN
        NULL;
    END;
    IF pg_catalog.has_function_privilege('public', 'messenger._check_reaper_duration(text, interval, interval, interval)', 'EXECUTE') THEN
        RAISE EXCEPTION 'PUBLIC must not execute messenger._check_reaper_duration';
    END IF;
END
$$;

ROLLBACK;
