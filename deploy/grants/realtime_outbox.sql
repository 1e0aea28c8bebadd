-- Deploy call_timeout_reaper:grants/realtime_outbox to pg
-- The reaper's owner may insert outbox rows, nothing else, and use the sequence behind id: a
-- pair's outbox without a default (a Citus shard) takes its id from it by nextval, which an
-- identity column's own default never needed, so an identity id's sequence gets USAGE as a
-- serial one's does. revert/grants/realtime_outbox.sql revokes exactly these.

BEGIN;

GRANT INSERT ON messenger.realtime_outbox TO messenger_call_reaper_owner;
DO $$
DECLARE
    v_sequence text := pg_catalog.pg_get_serial_sequence('messenger.realtime_outbox', 'id');
BEGIN
    IF v_sequence IS NOT NULL
       AND NOT pg_catalog.has_sequence_privilege('messenger_call_reaper_owner', v_sequence, 'USAGE') THEN
        EXECUTE pg_catalog.format('GRANT USAGE ON SEQUENCE %s TO messenger_call_reaper_owner', v_sequence);
    END IF;
END
$$;

COMMIT;
