-- Verify call_timeout_reaper:grants/call_sessions on pg

BEGIN;

DO $$
BEGIN
    IF NOT (pg_catalog.has_table_privilege('messenger_call_reaper_owner', 'messenger.call_sessions', 'SELECT')
            AND pg_catalog.has_column_privilege('messenger_call_reaper_owner', 'messenger.call_sessions', 'status', 'UPDATE')
            AND pg_catalog.has_column_privilege('messenger_call_reaper_owner', 'messenger.call_sessions', 'duration_seconds', 'UPDATE')) THEN
        RAISE EXCEPTION 'messenger_call_reaper_owner lost its grants on messenger.call_sessions';
    END IF;
END
$$;

ROLLBACK;
