-- Verify call_timeout_reaper:grants/realtime_outbox on pg

BEGIN;

DO $$
DECLARE
    v_sequence text := pg_catalog.pg_get_serial_sequence('messenger.realtime_outbox', 'id');
BEGIN
    IF NOT pg_catalog.has_table_privilege('messenger_call_reaper_owner', 'messenger.realtime_outbox', 'INSERT') THEN
        RAISE EXCEPTION 'messenger_call_reaper_owner lost INSERT on messenger.realtime_outbox';
    END IF;
    IF v_sequence IS NOT NULL
       AND NOT pg_catalog.has_sequence_privilege('messenger_call_reaper_owner', v_sequence, 'USAGE') THEN
        RAISE EXCEPTION 'messenger_call_reaper_owner may not use %, the sequence behind messenger.realtime_outbox.id', v_sequence;
    END IF;
END
$$;

ROLLBACK;
