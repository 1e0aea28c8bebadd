-- Verify call_timeout_reaper:functions/_call_reaper_index_shape on pg

BEGIN;

DO $$
BEGIN
    IF messenger._call_reaper_index_shape('messenger.realtime_outbox'::regclass) IS NOT NULL
       OR messenger._call_reaper_index_shape((SELECT i.indexrelid FROM pg_catalog.pg_index AS i
                                               WHERE i.indrelid = 'messenger.realtime_outbox'::regclass
                                                 AND i.indisprimary)) NOT LIKE 'UNIQUE USING btree (%' THEN
        RAISE EXCEPTION 'messenger._call_reaper_index_shape does not give an index''s shape';
    END IF;
END
$$;

ROLLBACK;
