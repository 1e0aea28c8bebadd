-- Deploy call_timeout_reaper:grants/realtime_outbox to pg
-- The reaper's owner may insert outbox rows, nothing else. An identity id needs no grant on its
-- sequence; a serial one does, so the sequence behind id (if any) gets USAGE too.
-- revert/grants/realtime_outbox.sql revokes exactly these.

BEGIN;

GRANT INSERT ON messenger.realtime_outbox TO messenger_call_reaper_owner;
DO $$
DECLARE
    v_sequence text := (SELECT pg_catalog.pg_get_serial_sequence('messenger.realtime_outbox', 'id')
                          FROM pg_catalog.pg_attribute AS a
                         WHERE a.attrelid = 'messenger.realtime_outbox'::pg_catalog.regclass
                           AND a.attname = 'id' AND a.attidentity = '');
BEGIN
    IF v_sequence IS NOT NULL THEN
        EXECUTE pg_catalog.format('GRANT USAGE ON SEQUENCE %s TO messenger_call_reaper_owner', v_sequence);
    END IF;
END
$$;

COMMIT;
