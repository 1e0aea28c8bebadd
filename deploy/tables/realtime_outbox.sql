-- Deploy call_timeout_reaper:tables/realtime_outbox to pg
-- Persist-then-push (ADR-0055): a writer inserts the intent in its own transaction; the
-- realtime-dispatch worker delivers rows in id order and stamps dispatched_at.

BEGIN;

CREATE TABLE messenger.realtime_outbox (
    id             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind           text        NOT NULL,
    target_kind    text        NOT NULL
        CONSTRAINT realtime_outbox_target_kind_check CHECK (target_kind IN ('User')),
    target_id      text        NOT NULL,
    reference_id   uuid        NOT NULL,
    payload        jsonb       NOT NULL,
    correlation_id uuid,
    created_at     timestamptz NOT NULL DEFAULT pg_catalog.now(),
    dispatched_at  timestamptz,
    CONSTRAINT realtime_outbox_user_target_check CHECK (
        target_kind <> 'User' OR target_id ~ '^user:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'),
    -- Call events carry ids and enums only (no PII): exactly these three keys, nothing else.
    CONSTRAINT realtime_outbox_call_payload_check CHECK (
        kind NOT IN ('CallMissed', 'CallEnded')
        OR (jsonb_typeof(payload) = 'object'
            AND payload ?& ARRAY['callId', 'status', 'mediaType']
            AND payload - ARRAY['callId', 'status', 'mediaType'] = '{}'::jsonb))
);

-- Never push twice: one row per (event, recipient) for the call events, enforced here rather
-- than trusted to every writer.
CREATE UNIQUE INDEX ux_realtime_outbox_call_event
    ON messenger.realtime_outbox (kind, reference_id, target_id)
    WHERE kind IN ('CallMissed', 'CallEnded');

-- The dispatcher's queue: undelivered rows in dispatch order.
CREATE INDEX ix_realtime_outbox_pending ON messenger.realtime_outbox (id)
    WHERE dispatched_at IS NULL;

COMMENT ON TABLE messenger.realtime_outbox IS
    'Realtime push intents, one row per (event, recipient), delivered by realtime-dispatch in id order.';
COMMENT ON COLUMN messenger.realtime_outbox.correlation_id IS
    'Id of the run that wrote the row (the reaper''s run_id).';

GRANT INSERT ON messenger.realtime_outbox TO messenger_call_reaper_owner;

COMMIT;
