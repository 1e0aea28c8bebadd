-- Verify call_timeout_reaper:tables/call_reaper_settings on pg

BEGIN;

DO $$
BEGIN
    IF (SELECT count(*) FROM messenger.call_reaper_settings) <> 1 THEN
        RAISE EXCEPTION 'messenger.call_reaper_settings must hold exactly one row';
    END IF;
    IF NOT pg_catalog.has_table_privilege('messenger_call_reaper_owner', 'messenger.call_reaper_settings', 'SELECT') THEN
        RAISE EXCEPTION 'messenger_call_reaper_owner must read messenger.call_reaper_settings';
    END IF;
END
$$;

ROLLBACK;
