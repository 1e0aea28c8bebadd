-- Verify call_timeout_reaper:indexes/ux_realtime_outbox_call_event on pg
-- A valid unique index enforces one call event per (kind, call, recipient): the reaper's, or the
-- messenger service's own on exactly these columns; when it is the reaper's it still has its
-- recorded shape.

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
    IF EXISTS (SELECT FROM messenger.call_reaper_indexes AS r
                WHERE r.change = 'indexes/ux_realtime_outbox_call_event'
                  AND r.shape IS DISTINCT FROM messenger._call_reaper_index_shape(
                          pg_catalog.to_regclass(pg_catalog.format('%I.%I', r.index_schema, r.index_name)))) THEN
        RAISE EXCEPTION 'the index recorded as the reaper''s ux_realtime_outbox_call_event is gone or has another definition: run sqitch deploy again';
    END IF;
END
$$;

ROLLBACK;
