-- Deploy call_timeout_reaper:grants/realtime_outbox to pg
-- The reaper's owner may insert outbox rows, nothing else, and use the sequence behind id
-- (serial or identity), if there is one. An identity column's own default needs no grant, but
-- an outbox relation of a pair whose id has no default (a Citus shard, messenger._reap_apply)
-- gets its id by an explicit nextval of this sequence, which does.
-- Reworked after v1.2.0 for the identity sequence; revert/grants/realtime_outbox.sql takes
-- back what this adds to the release.

BEGIN;

GRANT INSERT ON messenger.realtime_outbox TO messenger_call_reaper_owner;
DO $$
DECLARE
    v_sequence text := pg_catalog.pg_get_serial_sequence('messenger.realtime_outbox', 'id');
BEGIN
    -- Only if the owner cannot use it yet: a grant the product made stays the only one.
    IF v_sequence IS NOT NULL
       AND NOT pg_catalog.has_sequence_privilege('messenger_call_reaper_owner', v_sequence, 'USAGE') THEN
        EXECUTE pg_catalog.format('GRANT USAGE ON SEQUENCE %s TO messenger_call_reaper_owner', v_sequence);
    END IF;
END
$$;

COMMIT;
