-- Verify call_timeout_reaper:indexes/ix_call_due on pg
-- It exists and is valid (an interrupted online build leaves an INVALID index that claims cannot
-- use; a partitioned one is valid once every partition's index is attached), and when it is the
-- reaper's it still has its recorded shape.

BEGIN;

DO $$
BEGIN
    IF NOT (SELECT i.indisvalid FROM pg_catalog.pg_index AS i
             WHERE i.indexrelid = 'messenger.ix_call_due'::pg_catalog.regclass) THEN
        RAISE EXCEPTION 'messenger.ix_call_due is INVALID: run sqitch deploy again to rebuild it';
    END IF;
    IF EXISTS (SELECT FROM messenger.call_reaper_indexes AS r
                WHERE r.change = 'indexes/ix_call_due'
                  AND r.shape IS DISTINCT FROM messenger._call_reaper_index_shape(
                          pg_catalog.to_regclass(pg_catalog.format('%I.%I', r.index_schema, r.index_name)))) THEN
        RAISE EXCEPTION 'an index recorded as the reaper''s ix_call_due is gone or has another definition: run sqitch deploy again';
    END IF;
END
$$;

ROLLBACK;
