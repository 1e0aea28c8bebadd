-- Revert call_timeout_reaper:indexes/ix_call_due from pg
-- Only an index the deploy made (its comment says so).
-- No transaction: a plain index goes with DROP INDEX CONCURRENTLY, so writers never wait; a partitioned one cannot, and is dropped
-- (with its partitions' indexes) in short lock waits, retried. Partition indexes an interrupted
-- deploy built but did not attach go too.
-- Edited after its release (a deployed database runs the current revert): only so that it
-- leaves more of the product as it was (README, "Changing the schema").

SELECT coalesce(pg_catalog.obj_description(pg_catalog.to_regclass('messenger.ix_call_due'), 'pg_class')
                LIKE 'Added by call\_timeout\_reaper:%', false) AS ours,
       coalesce((SELECT c.relkind = 'I' FROM pg_catalog.pg_class AS c
                  WHERE c.oid = pg_catalog.to_regclass('messenger.ix_call_due')), false) AS partitioned \gset

\if :ours
\if :partitioned
-- DROP INDEX locks call_sessions and each partition: every try waits at most 100 ms for those
-- locks, then gives way and tries again after a pause (GitLab's with_lock_retries, inline:
-- messenger._call_reaper_with_lock_retries is reverted before this runs), so no product writer
-- queues longer than that behind it, however long a product transaction holds the table.
DO $$
BEGIN
    FOR v_try IN 1 .. 600 LOOP
        BEGIN
            SET LOCAL lock_timeout = '100ms';
            DROP INDEX messenger.ix_call_due;
            RETURN;
        EXCEPTION WHEN lock_not_available THEN
            PERFORM pg_catalog.pg_sleep(0.1 + 0.2 * pg_catalog.random());
        END;
    END LOOP;
    RAISE EXCEPTION 'no lock on messenger.call_sessions within 100 ms in 600 tries: messenger.ix_call_due was not dropped'
        USING ERRCODE = '55P03',
              HINT = 'A long transaction keeps the table locked: run sqitch revert again once it has ended.';
END
$$;
\else
DROP INDEX CONCURRENTLY messenger.ix_call_due;
\endif
\endif
SELECT pg_catalog.format('DROP INDEX CONCURRENTLY %s', x.oid::pg_catalog.regclass)
  FROM pg_catalog.pg_inherits AS h
  JOIN pg_catalog.pg_index AS i ON i.indrelid = h.inhrelid
  JOIN pg_catalog.pg_class AS x ON x.oid = i.indexrelid
 WHERE h.inhparent = pg_catalog.to_regclass('messenger.call_sessions')
   AND x.relname LIKE '%\_ix\_call\_due'
   AND NOT EXISTS (SELECT FROM pg_catalog.pg_inherits AS a WHERE a.inhrelid = x.oid) \gexec

-- Sqitch runs this revert right after a failed indexes/ux_realtime_outbox_call_event on a fresh
-- deploy, where that change runs its released script: stopped at one of its waits, the build
-- leaves an INVALID index with neither a record nor a comment, and the reaper's later helpers
-- do not exist yet. It is the reaper's by definition: an INVALID unique index of that name on
-- the outbox, of exactly the released definition (compared with the same index built on an
-- empty temporary copy of the outbox's columns, dropped again).
CREATE TEMPORARY TABLE call_reaper_ux_model (LIKE messenger.realtime_outbox);
CREATE UNIQUE INDEX call_reaper_ux_model_ix ON pg_temp.call_reaper_ux_model (kind, reference_id, target_id)
    WHERE kind IN ('CallMissed', 'CallEnded');
SELECT coalesce((SELECT NOT i.indisvalid AND i.indisunique
                        AND i.indrelid = 'messenger.realtime_outbox'::pg_catalog.regclass
                        AND pg_catalog.substring(pg_catalog.pg_get_indexdef(i.indexrelid), ' (USING .*)$')
                          = pg_catalog.substring(pg_catalog.pg_get_indexdef('pg_temp.call_reaper_ux_model_ix'::pg_catalog.regclass), ' (USING .*)$')
                   FROM pg_catalog.pg_index AS i
                  WHERE i.indexrelid = pg_catalog.to_regclass('messenger.ux_realtime_outbox_call_event')), false)
       AS ux_unfinished \gset
DROP TABLE pg_temp.call_reaper_ux_model;
\if :ux_unfinished
DROP INDEX CONCURRENTLY messenger.ux_realtime_outbox_call_event;
\endif
