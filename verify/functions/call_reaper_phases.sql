-- Verify call_timeout_reaper:functions/call_reaper_phases on pg

BEGIN;

DO $$
BEGIN
    IF (SELECT count(*) FROM messenger.call_reaper_phases()) <> 2 THEN
        RAISE EXCEPTION 'messenger.call_reaper_phases() must return one row per phase';
    END IF;
    -- Each phase's window is an interval column of the settings.
    IF EXISTS (SELECT FROM messenger.call_reaper_phases() AS p
                WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_attribute AS a
                                   WHERE a.attrelid = 'messenger.call_reaper_settings'::regclass
                                     AND a.attname = p.timeout_setting AND NOT a.attisdropped
                                     AND a.atttypid = 'interval'::regtype)) THEN
        RAISE EXCEPTION 'every timeout_setting of messenger.call_reaper_phases() must name an interval column of messenger.call_reaper_settings';
    END IF;
END
$$;

ROLLBACK;
