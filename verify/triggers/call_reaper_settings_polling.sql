-- Verify call_timeout_reaper:triggers/call_reaper_settings_polling on pg

BEGIN;

DO $$
BEGIN
    IF NOT coalesce(EXISTS (SELECT FROM pg_catalog.pg_trigger
                       WHERE tgrelid = 'messenger.call_reaper_settings'::regclass
                         AND tgname = 'call_reaper_settings_polling_guard'
                         AND tgfoid = 'messenger._call_reaper_polling_guard()'::regprocedure), false) THEN
        RAISE EXCEPTION 'call_reaper_settings_polling_guard must guard messenger.call_reaper_settings';
    END IF;
    BEGIN
        UPDATE messenger.call_reaper_settings SET polling_interval = interval '7 seconds';
        RAISE EXCEPTION 'a polling_interval of 7 seconds was accepted' USING ERRCODE = 'P0004';
    EXCEPTION WHEN invalid_parameter_value THEN
        NULL;
    END;
END
$$;

ROLLBACK;
