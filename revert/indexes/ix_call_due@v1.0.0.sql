-- Revert call_timeout_reaper:indexes/ix_call_due from pg
-- Only an index the deploy made (its comment says so).
-- No transaction: a plain index goes with DROP INDEX CONCURRENTLY, so writers never wait; a partitioned one cannot, and is dropped
-- (with its partitions' indexes) under a bounded lock wait. Partition indexes an interrupted
-- deploy built but did not attach go too.

SELECT coalesce(pg_catalog.obj_description(pg_catalog.to_regclass('messenger.ix_call_due'), 'pg_class')
                LIKE 'Added by call\_timeout\_reaper:%', false) AS ours,
       coalesce((SELECT c.relkind = 'I' FROM pg_catalog.pg_class AS c
                  WHERE c.oid = pg_catalog.to_regclass('messenger.ix_call_due')), false) AS partitioned \gset

\if :ours
\if :partitioned
SET lock_timeout = '10s';
DROP INDEX messenger.ix_call_due;
RESET lock_timeout;
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
