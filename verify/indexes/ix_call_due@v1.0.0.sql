-- Verify call_timeout_reaper:indexes/ix_call_due on pg
-- It exists and is valid: an interrupted online build leaves an INVALID index that claims
-- cannot use (a partitioned one is valid once every partition's index is attached).

BEGIN;

DO $$
BEGIN
    IF NOT (SELECT i.indisvalid FROM pg_catalog.pg_index AS i
             WHERE i.indexrelid = 'messenger.ix_call_due'::pg_catalog.regclass) THEN
        RAISE EXCEPTION 'messenger.ix_call_due is INVALID: run sqitch deploy again to rebuild it';
    END IF;
END
$$;

ROLLBACK;
