-- Verify call_timeout_reaper:grants/realtime_outbox on pg

BEGIN;

DO $$
BEGIN
    IF NOT pg_catalog.has_table_privilege('messenger_call_reaper_owner', 'messenger.realtime_outbox', 'INSERT') THEN
        RAISE EXCEPTION 'messenger_call_reaper_owner lost INSERT on messenger.realtime_outbox';
    END IF;
END
$$;

ROLLBACK;
