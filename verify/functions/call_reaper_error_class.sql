-- Verify call_timeout_reaper:functions/call_reaper_error_class on pg

BEGIN;

DO $$
BEGIN
    IF messenger.call_reaper_error_class('40001') <> 'transient'
       OR messenger.call_reaper_error_class('23505') <> 'data' THEN
        RAISE EXCEPTION 'messenger.call_reaper_error_class() classes states wrongly';
    END IF;
END
$$;

ROLLBACK;
