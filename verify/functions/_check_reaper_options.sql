-- Verify call_timeout_reaper:functions/_check_reaper_options on pg

BEGIN;

SELECT messenger._check_reaper_options(200, interval '45 seconds', interval '2 hours', pg_catalog.now());

DO $$
BEGIN
    BEGIN
        PERFORM messenger._check_reaper_options(0, interval '45 seconds', interval '2 hours');
        RAISE EXCEPTION 'batch_size 0 was accepted';
    EXCEPTION WHEN invalid_parameter_value THEN
        NULL;
    END;
    BEGIN
        PERFORM messenger._check_reaper_options(200, interval '1 day', interval '2 hours');
        RAISE EXCEPTION 'a ring_timeout with a day part was accepted';
    EXCEPTION WHEN invalid_parameter_value THEN
        NULL;
    END;
END
$$;

ROLLBACK;
