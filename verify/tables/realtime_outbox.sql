-- Verify call_timeout_reaper:tables/realtime_outbox on pg

BEGIN;

SELECT id, kind, target_kind, target_id, reference_id, payload, correlation_id, created_at, dispatched_at
  FROM messenger.realtime_outbox
 WHERE false;

DO $$
BEGIN
    IF NOT coalesce((SELECT i.indisunique FROM pg_catalog.pg_index i
                WHERE i.indexrelid = 'messenger.ux_realtime_outbox_call_event'::regclass), false) THEN
        RAISE EXCEPTION 'ux_realtime_outbox_call_event must be unique';
    END IF;
END
$$;

ROLLBACK;
