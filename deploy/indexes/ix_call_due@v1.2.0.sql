-- Deploy call_timeout_reaper:indexes/ix_call_due to pg
-- The one index of the due rule (messenger.call_due_key): active calls by (status, due key,
-- call_id), partial on "has a due key" (= active); why so: docs/design.md, "One index of the
-- due rule".
--
-- Built online on the messenger service's live table, and owned by record, never by name:
-- No transaction: CREATE INDEX CONCURRENTLY cannot run in one.
--   * First, whatever an earlier failed or cancelled build of the reaper's left (recorded in
--     messenger.call_reaper_indexes, INVALID or attached to nothing) is dropped.
--   * messenger._call_reaper_index_claim records an index before its build starts, keeps the
--     reaper's own (v1.1.0's included: no rebuild on upgrade), uses a product index of this name
--     and definition as the product's (never dropped), and refuses any other (55000).
--   * A partitioned call_sessions cannot be indexed concurrently as a whole: the index is made
--     on the parent only (instant), each partition's is built concurrently and attached, and
--     partitions made later get theirs from the parent. The two steps that lock the product's
--     table (ON ONLY: SHARE on the parent; ATTACH) wait 100 ms at a time and retry
--     (messenger._call_reaper_with_lock_retries), so no writer queues longer behind them.
--   * The comment is v1.1.0's mark: its revert, which a full revert still runs, drops only a
--     marked index.

\set definition '(status, messenger.call_due_key(status, started_at, updated_at), call_id) WHERE messenger.call_due_key(status, started_at, updated_at) IS NOT NULL'

SELECT l.drop_statement, l.forget_statement FROM messenger._call_reaper_index_leftovers() AS l \gexec

SELECT c.relkind = 'p' AS partitioned,
       messenger._call_reaper_index_claim('indexes/ix_call_due', c.oid, 'ix_call_due', :'definition') AS build
  FROM pg_catalog.pg_class AS c WHERE c.oid = 'messenger.call_sessions'::pg_catalog.regclass \gset

\if :partitioned
\if :build
SELECT messenger._call_reaper_with_lock_retries(
           pg_catalog.format('CREATE INDEX ix_call_due ON ONLY messenger.call_sessions %s', :'definition')) AS tries \gset
COMMENT ON INDEX messenger.ix_call_due IS 'Added by call_timeout_reaper: the due rule''s index (indexes/ix_call_due).';
\endif
-- Partitions of the reaper's index not yet covered: each claimed (all recorded before the first
-- build), built online, attached.
SELECT CASE WHEN messenger._call_reaper_index_claim('indexes/ix_call_due', p.oid, x.name, :'definition',
                                                    false, 'ix_call_due')
            THEN pg_catalog.format('CREATE INDEX CONCURRENTLY %I ON %s %s', x.name, p.oid::pg_catalog.regclass, :'definition') END,
       pg_catalog.format('SELECT messenger._call_reaper_with_lock_retries(%L)',
                         pg_catalog.format('ALTER INDEX messenger.ix_call_due ATTACH PARTITION %I.%I', n.nspname, x.name))
  FROM pg_catalog.pg_inherits AS h
  JOIN pg_catalog.pg_class AS p ON p.oid = h.inhrelid
  JOIN pg_catalog.pg_namespace AS n ON n.oid = p.relnamespace
 CROSS JOIN LATERAL (SELECT (pg_catalog.left(p.relname, 50) || '_ix_call_due')::name) AS x (name)
 WHERE h.inhparent = 'messenger.call_sessions'::pg_catalog.regclass
   AND EXISTS (SELECT FROM messenger.call_reaper_indexes AS r
                WHERE (r.index_schema, r.index_name) = ('messenger', 'ix_call_due'))
   AND NOT EXISTS (SELECT FROM pg_catalog.pg_inherits AS a
                     JOIN pg_catalog.pg_index AS ai ON ai.indexrelid = a.inhrelid
                    WHERE a.inhparent = 'messenger.ix_call_due'::pg_catalog.regclass
                      AND ai.indrelid = p.oid)
 ORDER BY p.oid \gexec
\else
\if :build
CREATE INDEX CONCURRENTLY ix_call_due ON messenger.call_sessions :definition;
COMMENT ON INDEX messenger.ix_call_due IS 'Added by call_timeout_reaper: the due rule''s index (indexes/ix_call_due).';
\endif
\endif
