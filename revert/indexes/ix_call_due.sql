-- Revert call_timeout_reaper:indexes/ix_call_due from pg
-- Drops the reaper's ix_call_due, owned by record: only an index messenger.call_reaper_indexes
-- lists as this change's and that still has its recorded shape (a product index of the name,
-- the product's ix_call_active the claims read instead, and anything redefined since stay).
-- Online: DROP INDEX CONCURRENTLY on a plain call_sessions; a partitioned one's index (its
-- partitions' parts go with it) takes 100 ms lock waits, retried, so no writer queues behind
-- it. What an interrupted build left (INVALID, attached to nothing) goes too.
-- No transaction: DROP INDEX CONCURRENTLY cannot run in one.

SELECT l.drop_statement, l.forget_statement FROM messenger._call_reaper_index_leftovers() AS l \gexec

SELECT CASE WHEN c.relkind = 'I'
            THEN pg_catalog.format('SELECT messenger._call_reaper_with_lock_retries(%L)',
                                   pg_catalog.format('DROP INDEX %I.%I', r.index_schema, r.index_name))
            ELSE pg_catalog.format('DROP INDEX CONCURRENTLY %I.%I', r.index_schema, r.index_name) END
  FROM messenger.call_reaper_indexes AS r
  JOIN pg_catalog.pg_class AS c ON c.oid = pg_catalog.to_regclass(pg_catalog.format('%I.%I', r.index_schema, r.index_name))
 WHERE r.change = 'indexes/ix_call_due' AND r.attach_to IS NULL
   AND r.shape = messenger._call_reaper_index_shape(c.oid) \gexec

-- Forgotten once gone: the index, and its partitions' parts dropped with it.
DELETE FROM messenger.call_reaper_indexes AS r
 WHERE r.change = 'indexes/ix_call_due'
   AND pg_catalog.to_regclass(pg_catalog.format('%I.%I', r.index_schema, r.index_name)) IS NULL;
