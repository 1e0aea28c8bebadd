-- Verify call_timeout_reaper:tables/call_reaper_settings on pg

BEGIN;

SELECT 1 / count(*)
  FROM messenger.call_reaper_settings
 WHERE batch_size BETWEEN 1 AND 10000;

DO $$
BEGIN
    BEGIN
        UPDATE messenger.call_reaper_settings SET batch_size = 0;
        RAISE EXCEPTION 'call_reaper_settings accepted batch_size = 0';
    EXCEPTION WHEN invalid_parameter_value THEN
        NULL;
    END;
END
$$;

ROLLBACK;
