-- Verify call_timeout_reaper:indexes/ux_realtime_outbox_call_event on pg
-- A valid unique index enforces one call event per (kind, call, recipient): the reaper's, or the
-- messenger service's own on exactly these columns.

BEGIN;

DO $$
BEGIN
    IF NOT EXISTS (
           SELECT FROM pg_catalog.pg_index AS i
            WHERE i.indrelid = 'messenger.realtime_outbox'::pg_catalog.regclass
              AND i.indisunique AND i.indisvalid AND i.indnkeyatts = 3
              AND (i.indexrelid = pg_catalog.to_regclass('messenger.ux_realtime_outbox_call_event')
                   OR i.indpred IS NULL)
              AND (SELECT pg_catalog.array_agg(a.attname::text ORDER BY a.attname)
                     FROM pg_catalog.pg_attribute AS a
                    WHERE a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)) = '{kind,reference_id,target_id}') THEN
        RAISE EXCEPTION 'messenger.realtime_outbox has no valid unique index on (kind, reference_id, target_id)';
    END IF;
END
$$;

ROLLBACK;
