-- Revert call_timeout_reaper:grants/realtime_outbox from pg

BEGIN;

DO $$
DECLARE
    v_sequence text := (SELECT pg_catalog.pg_get_serial_sequence('messenger.realtime_outbox', 'id')
                          FROM pg_catalog.pg_attribute AS a
                         WHERE a.attrelid = 'messenger.realtime_outbox'::pg_catalog.regclass
                           AND a.attname = 'id' AND a.attidentity = '');
BEGIN
    IF v_sequence IS NOT NULL THEN
        EXECUTE pg_catalog.format('REVOKE USAGE ON SEQUENCE %s FROM messenger_call_reaper_owner', v_sequence);
    END IF;
END
$$;
REVOKE INSERT ON messenger.realtime_outbox FROM messenger_call_reaper_owner;

COMMIT;
