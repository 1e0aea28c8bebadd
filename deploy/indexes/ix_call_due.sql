-- Deploy call_timeout_reaper:indexes/ix_call_due to pg
-- The index of the claim: active calls by (status, started_at, call_id), partial on the two
-- statuses a phase closes. It names no column that a progress update writes (updated_at): an
-- UPDATE of an Answered call that touches only updated_at stays a HOT update, as without the
-- reaper. Why so: docs/design.md, "The due rule and its one index"; the due rule itself is
-- messenger.call_is_due.
--
-- Not built at all where the product already has an index the claims can read, its own index of
-- active calls (the service's ix_call_active, (status, started_at) WHERE status IN ('Ringing',
-- 'Answered')): the claims then walk that one. Every product write then pays for no index of
-- the reaper's; a new call and an answer write one entry less. A reaper's ix_call_due that an
-- interrupted run of this script finished before the product's index appeared is dropped online.
--
-- Otherwise built online on the messenger service's live table, and owned by record, never by name:
-- No transaction: CREATE INDEX CONCURRENTLY cannot run in one.
--   * First, whatever an earlier failed or cancelled build of the reaper's left (recorded in
--     messenger.call_reaper_indexes, INVALID or attached to nothing) is dropped.
--   * messenger._call_reaper_index_claim builds ix_call_due when it is not there, keeps the
--     reaper's own, uses a product index of this name and definition as the product's (never
--     dropped), and refuses any other (55000).
--   * A partitioned call_sessions cannot be indexed concurrently as a whole: the index is made
--     on the parent only (instant), each partition's is built concurrently and attached, and
--     partitions made later get theirs from the parent. The steps that lock the product's
--     table (ON ONLY, ATTACH) wait 100 ms at a time and retry
--     (messenger._call_reaper_with_lock_retries).
-- Run again after a failure, each step finds what the last run did and goes on from there.

\set definition '(status, started_at, call_id) WHERE status IN (''Ringing'', ''Answered'')'
\set target ix_call_due

SELECT l.drop_statement, l.forget_statement FROM messenger._call_reaper_index_leftovers() AS l \gexec

-- The product's own index of active calls, where it has one the claims can read
-- (messenger._call_reaper_claim_indexes: the service's ix_call_active): used instead of
-- building one, so the product's writes carry no index of the reaper's (docs/design.md, "The
-- due rule and its one index"). The reaper's own ix_call_due, if a run of this script built it
-- before the product had its index, is then dropped online with its records.
SELECT a.name IS NOT NULL AS adopt, coalesce(a.name, '') AS adopted
  FROM (SELECT pg_catalog.min(pg_catalog.format('%I.%I', n.nspname, c.relname)) AS name
          FROM messenger._call_reaper_claim_indexes('messenger.call_sessions') AS x (ix)
          JOIN pg_catalog.pg_class AS c ON c.oid = x.ix
          JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
         WHERE NOT EXISTS (SELECT FROM messenger.call_reaper_indexes AS r
                            WHERE (r.index_schema, r.index_name) = (n.nspname, c.relname))) AS a \gset
\if :adopt
\echo 'indexes/ix_call_due:' :adopted 'is the product''s index of active calls: the claims read it, the reaper builds none'
SELECT CASE WHEN p.relkind = 'p'
            THEN pg_catalog.format('SELECT messenger._call_reaper_with_lock_retries(%L)',
                                   pg_catalog.format('DROP INDEX %I.%I', r.index_schema, r.index_name))
            ELSE pg_catalog.format('DROP INDEX CONCURRENTLY %I.%I', r.index_schema, r.index_name) END
  FROM messenger.call_reaper_indexes AS r
  JOIN pg_catalog.pg_class AS p ON p.oid = 'messenger.call_sessions'::pg_catalog.regclass
 WHERE r.index_schema = 'messenger' AND r.index_name = 'ix_call_due' AND r.attach_to IS NULL
   AND r.shape = messenger._call_reaper_index_shape(pg_catalog.to_regclass(pg_catalog.format('%I.%I', r.index_schema, r.index_name)))
 ORDER BY r.index_name \gexec
-- What is gone is forgotten: the index, and its partitions' parts dropped with it.
DELETE FROM messenger.call_reaper_indexes AS r
 WHERE ((r.index_schema = 'messenger' AND r.index_name = 'ix_call_due') OR r.attach_to = 'ix_call_due')
   AND r.shape IS DISTINCT FROM messenger._call_reaper_index_shape(
           pg_catalog.to_regclass(pg_catalog.format('%I.%I', r.index_schema, r.index_name)));
\else

SELECT c.relkind = 'p' AS partitioned
  FROM pg_catalog.pg_class AS c WHERE c.oid = 'messenger.call_sessions'::pg_catalog.regclass \gset
SELECT messenger._call_reaper_index_claim('indexes/ix_call_due', 'messenger.call_sessions'::pg_catalog.regclass,
                                          :'target', :'definition') AS build \gset

\if :partitioned
\if :build
SELECT messenger._call_reaper_with_lock_retries(
           pg_catalog.format('CREATE INDEX %I ON ONLY messenger.call_sessions %s', :'target', :'definition')) AS tries \gset
\endif
-- Partitions of the index not yet covered: each claimed (all recorded before the first build),
-- built online, attached. A part is named <partition>_<index>, within 62 characters.
SELECT CASE WHEN messenger._call_reaper_index_claim('indexes/ix_call_due', p.oid, x.name, :'definition',
                                                    false, :'target')
            THEN pg_catalog.format('CREATE INDEX CONCURRENTLY %I ON %s %s', x.name, p.oid::pg_catalog.regclass, :'definition') END,
       pg_catalog.format('SELECT messenger._call_reaper_with_lock_retries(%L)',
                         pg_catalog.format('ALTER INDEX messenger.%I ATTACH PARTITION %I.%I', :'target', n.nspname, x.name))
  FROM pg_catalog.pg_inherits AS h
  JOIN pg_catalog.pg_class AS p ON p.oid = h.inhrelid
  JOIN pg_catalog.pg_namespace AS n ON n.oid = p.relnamespace
 CROSS JOIN LATERAL (SELECT (pg_catalog.left(p.relname, 61 - pg_catalog.length(:'target')) || '_' || :'target')::name) AS x (name)
 WHERE h.inhparent = 'messenger.call_sessions'::pg_catalog.regclass
   AND EXISTS (SELECT FROM messenger.call_reaper_indexes AS r
                WHERE (r.index_schema, r.index_name) = ('messenger', :'target'))
   AND NOT EXISTS (SELECT FROM pg_catalog.pg_inherits AS a
                     JOIN pg_catalog.pg_index AS ai ON ai.indexrelid = a.inhrelid
                    WHERE a.inhparent = pg_catalog.format('messenger.%I', :'target')::pg_catalog.regclass
                      AND ai.indrelid = p.oid)
 ORDER BY p.oid \gexec
\else
\if :build
SELECT pg_catalog.format('CREATE INDEX CONCURRENTLY %I ON messenger.call_sessions %s', :'target', :'definition') \gexec
\endif
\endif

\if :build
COMMENT ON INDEX messenger.ix_call_due IS 'Added by call_timeout_reaper: the due rule''s index (indexes/ix_call_due).';
\endif
\endif
