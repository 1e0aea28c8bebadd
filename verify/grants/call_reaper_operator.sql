-- Verify call_timeout_reaper:grants/call_reaper_operator on pg
-- That an operator can run a cycle with arguments; the full list: tests/pgtap/privileges.sql.

BEGIN;

DO $$
BEGIN
    IF NOT pg_catalog.has_function_privilege('messenger_call_reaper_operator',
               'messenger._reap_cycle(integer, interval, interval, timestamptz, uuid)', 'EXECUTE') THEN
        RAISE EXCEPTION 'messenger_call_reaper_operator must execute messenger._reap_cycle';
    END IF;
END
$$;

ROLLBACK;
