-- Verify call_timeout_reaper:triggers/call_reaper_settings_guard on pg

BEGIN;

DO $$
BEGIN
    IF (SELECT count(*) FROM pg_catalog.pg_trigger
         WHERE tgrelid = 'messenger.call_reaper_settings'::regclass
           AND tgname IN ('call_reaper_settings_guard', 'call_reaper_settings_no_truncate')
           AND tgfoid = 'messenger._call_reaper_settings_guard()'::regprocedure) <> 2 THEN
        RAISE EXCEPTION 'call_reaper_settings_guard and call_reaper_settings_no_truncate must guard messenger.call_reaper_settings';
    END IF;
    BEGIN
        UPDATE messenger.call_reaper_settings SET batch_size = 0;
        RAISE EXCEPTION 'call_reaper_settings accepted batch_size = 0' USING ERRCODE = 'P0004';
    EXCEPTION WHEN invalid_parameter_value THEN
        NULL;
    END;
    BEGIN
        UPDATE messenger.call_reaper_settings SET polling_interval = interval '7 seconds';
        RAISE EXCEPTION 'a polling_interval of 7 seconds was accepted' USING ERRCODE = 'P0004';
    EXCEPTION WHEN invalid_parameter_value THEN
        NULL;
    END;
    BEGIN
        DELETE FROM messenger.call_reaper_settings;
        RAISE EXCEPTION 'the settings row was deleted' USING ERRCODE = 'P0004';
    EXCEPTION WHEN object_not_in_prerequisite_state THEN
        NULL;
    END;
END
$$;

ROLLBACK;
