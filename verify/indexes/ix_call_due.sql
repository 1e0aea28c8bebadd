-- Verify call_timeout_reaper:indexes/ix_call_due on pg
-- The claims have a valid index to read (messenger._call_reaper_claim_indexes): ix_call_due, or
-- the product's own index of active calls used instead of it (an interrupted online build leaves
-- an INVALID index that claims cannot use; a partitioned one is valid once every partition's
-- index is attached), and where ix_call_due is the
-- reaper's it still has its recorded shape, which names no updated_at (a progress update of an
-- Answered call stays HOT).

BEGIN;

DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM messenger._call_reaper_claim_indexes('messenger.call_sessions')) THEN
        IF pg_catalog.to_regclass('messenger.ix_call_due') IS NOT NULL THEN
            RAISE EXCEPTION 'messenger.ix_call_due is INVALID: run sqitch deploy again to rebuild it';
        END IF;
        RAISE EXCEPTION 'messenger.call_sessions has no index the claims can read (ix_call_due, or the product''s own on (status, started_at))'
            USING HINT = 'Where the product dropped its index of active calls: sqitch rebase --onto ''indexes/ix_call_due^'' builds ix_call_due.';
    END IF;
    IF EXISTS (SELECT FROM messenger.call_reaper_indexes AS r
                WHERE r.change = 'indexes/ix_call_due'
                  AND r.shape IS DISTINCT FROM messenger._call_reaper_index_shape(
                          pg_catalog.to_regclass(pg_catalog.format('%I.%I', r.index_schema, r.index_name)))) THEN
        RAISE EXCEPTION 'an index recorded as the reaper''s ix_call_due is gone or has another definition: run sqitch deploy again';
    END IF;
    IF messenger._call_reaper_index_shape(pg_catalog.to_regclass('messenger.ix_call_due')) LIKE '%updated_at%'
       AND EXISTS (SELECT FROM messenger.call_reaper_indexes AS r
                    WHERE (r.index_schema, r.index_name) = ('messenger', 'ix_call_due')) THEN
        RAISE EXCEPTION 'messenger.ix_call_due indexes updated_at: a progress update of an Answered call is not HOT';
    END IF;
END
$$;

ROLLBACK;
