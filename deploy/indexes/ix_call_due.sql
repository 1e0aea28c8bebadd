-- Deploy call_timeout_reaper:indexes/ix_call_due to pg
-- The index of the claim: active calls by (status, started_at, call_id), partial on the two
-- statuses a phase closes. It names no column that a progress update writes (updated_at): an
-- UPDATE of an Answered call that touches only updated_at stays a HOT update, as without the
-- reaper (the released index keyed on call_due_key(status, started_at, updated_at) made every
-- one of them write an entry into every index of call_sessions). Why so: docs/design.md, "The
-- due rule and its one index"; the due rule itself is messenger.call_is_due.
--
-- Not built at all where the product already has an index the claims can read, its own index of
-- active calls (the service's ix_call_active, (status, started_at) WHERE status IN ('Ringing',
-- 'Answered')): the claims then walk that one, and a reaper's ix_call_due left from an earlier
-- release or deploy is dropped online. Every product write then pays for no index of the
-- reaper's; a new call and an answer write one entry less.
--
-- Otherwise built online on the messenger service's live table, and owned by record, never by name:
-- No transaction: CREATE INDEX CONCURRENTLY and DROP INDEX CONCURRENTLY cannot run in one.
--   * First, whatever an earlier failed or cancelled build of the reaper's left (recorded in
--     messenger.call_reaper_indexes, INVALID or attached to nothing) is dropped.
--   * Where ix_call_due is the reaper's of another definition (the released one), the new one
--     is built beside it as ix_call_due_next, the old one dropped (DROP INDEX CONCURRENTLY; a
--     partitioned one in 100 ms lock waits, retried), and ix_call_due_next renamed to
--     ix_call_due, with its partitions' parts and their records, in one statement (an index
--     RENAME takes SHARE UPDATE EXCLUSIVE on the index only: no writer waits). Run again
--     after a failure, each step finds what the last run did and goes on from there.
--   * Otherwise messenger._call_reaper_index_claim builds ix_call_due when it is not there,
--     keeps the reaper's own, uses a product index of this name and definition as the
--     product's (never dropped), and refuses any other (55000), the released definition too.
--   * A partitioned call_sessions cannot be indexed concurrently as a whole: the index is made
--     on the parent only (instant), each partition's is built concurrently and attached, and
--     partitions made later get theirs from the parent. The steps that lock the product's
--     table (ON ONLY, ATTACH, the DROP) wait 100 ms at a time and retry
--     (messenger._call_reaper_with_lock_retries).
--   * The comment is v1.1.0's mark: its revert, which a full revert still runs, drops only a
--     marked index.
-- The revert runs this script with the released definition (:definition set, :reverting on).

\if :{?definition}
\else
\set definition '(status, started_at, call_id) WHERE status IN (''Ringing'', ''Answered'')'
\endif
\if :{?reverting}
\else
\set reverting false
\endif

SELECT l.drop_statement, l.forget_statement FROM messenger._call_reaper_index_leftovers() AS l \gexec

-- The product's own index of active calls, where it has one the claims can read
-- (messenger._call_reaper_claim_indexes: the service's ix_call_active): used instead of
-- building one, so the product's writes carry no index of the reaper's (docs/design.md, "The
-- due rule and its one index"). The reaper's own ix_call_due (a released one, or this change's
-- built before the product had its index) is then dropped online with its records. Never on a
-- revert: the released routines read the released index, which the revert builds.
SELECT NOT :reverting AND a.name IS NOT NULL AS adopt, coalesce(a.name, '') AS adopted
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
 WHERE r.index_schema = 'messenger' AND r.index_name IN ('ix_call_due', 'ix_call_due_next') AND r.attach_to IS NULL
   AND r.shape = messenger._call_reaper_index_shape(pg_catalog.to_regclass(pg_catalog.format('%I.%I', r.index_schema, r.index_name)))
 ORDER BY r.index_name \gexec
-- What is gone is forgotten: the two, and their partitions' parts dropped with them.
DELETE FROM messenger.call_reaper_indexes AS r
 WHERE ((r.index_schema = 'messenger' AND r.index_name IN ('ix_call_due', 'ix_call_due_next'))
        OR r.attach_to IN ('ix_call_due', 'ix_call_due_next'))
   AND r.shape IS DISTINCT FROM messenger._call_reaper_index_shape(
           pg_catalog.to_regclass(pg_catalog.format('%I.%I', r.index_schema, r.index_name)));
\else

-- The shape wanted, as this server deparses it: an index on an empty temporary copy of the
-- columns (no lock on the product's table beyond LIKE's read).
CREATE TEMPORARY TABLE call_reaper_ix_model (LIKE messenger.call_sessions);
CREATE INDEX call_reaper_ix_model_ix ON pg_temp.call_reaper_ix_model :definition;
SELECT c.relkind = 'p' AS partitioned,
       EXISTS (SELECT FROM messenger.call_reaper_indexes AS r
                WHERE r.index_schema = 'messenger'
                  AND ((r.index_name = 'ix_call_due'
                        AND r.shape <> messenger._call_reaper_index_shape('pg_temp.call_reaper_ix_model_ix'::pg_catalog.regclass))
                       OR r.index_name = 'ix_call_due_next')) AS swap,
       :reverting AND pg_catalog.to_regclass('messenger.ix_call_due') IS NOT NULL
       AND NOT EXISTS (SELECT FROM messenger.call_reaper_indexes AS r
                        WHERE (r.index_schema, r.index_name) = ('messenger', 'ix_call_due')) AS product_owns
  FROM pg_catalog.pg_class AS c WHERE c.oid = 'messenger.call_sessions'::pg_catalog.regclass \gset
DROP TABLE pg_temp.call_reaper_ix_model;
SELECT CASE WHEN :'swap'::boolean THEN 'ix_call_due_next' ELSE 'ix_call_due' END AS target \gset

-- Reverting past a product index of the name (never recorded): it stays as it is.
\if :product_owns
\else
SELECT messenger._call_reaper_index_claim('indexes/ix_call_due', c.oid, :'target', :'definition') AS build
  FROM pg_catalog.pg_class AS c WHERE c.oid = 'messenger.call_sessions'::pg_catalog.regclass \gset

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

\if :swap
-- The old index goes (online), with the records of it and of its partitions' parts.
SELECT pg_catalog.to_regclass('messenger.ix_call_due') IS NOT NULL
       AND EXISTS (SELECT FROM messenger.call_reaper_indexes AS r
                    WHERE (r.index_schema, r.index_name) = ('messenger', 'ix_call_due')) AS drop_old \gset
\if :drop_old
\if :partitioned
SELECT messenger._call_reaper_with_lock_retries('DROP INDEX messenger.ix_call_due') AS tries \gset
\else
DROP INDEX CONCURRENTLY messenger.ix_call_due;
\endif
\endif
DELETE FROM messenger.call_reaper_indexes AS r
 WHERE (r.index_schema = 'messenger' AND r.index_name = 'ix_call_due') OR r.attach_to = 'ix_call_due';

-- One statement, so the names and their records change together or not at all.
DO $$
DECLARE
    v_part record;
BEGIN
    ALTER INDEX messenger.ix_call_due_next RENAME TO ix_call_due;
    UPDATE messenger.call_reaper_indexes AS r SET index_name = 'ix_call_due'
     WHERE (r.index_schema, r.index_name) = ('messenger', 'ix_call_due_next');
    FOR v_part IN
        SELECT r.index_schema, r.index_name, x.name
          FROM messenger.call_reaper_indexes AS r
          JOIN pg_catalog.pg_index AS i
            ON i.indexrelid = pg_catalog.to_regclass(pg_catalog.format('%I.%I', r.index_schema, r.index_name))
          JOIN pg_catalog.pg_class AS p ON p.oid = i.indrelid
         CROSS JOIN LATERAL (SELECT (pg_catalog.left(p.relname, 50) || '_ix_call_due')::name) AS x (name)
         WHERE r.attach_to = 'ix_call_due_next'
         ORDER BY p.oid
    LOOP
        EXECUTE pg_catalog.format('ALTER INDEX %I.%I RENAME TO %I', v_part.index_schema, v_part.index_name, v_part.name);
        UPDATE messenger.call_reaper_indexes AS r SET index_name = v_part.name, attach_to = 'ix_call_due'
         WHERE (r.index_schema, r.index_name) = (v_part.index_schema, v_part.index_name);
    END LOOP;
    COMMENT ON INDEX messenger.ix_call_due IS 'Added by call_timeout_reaper: the due rule''s index (indexes/ix_call_due).';
END
$$;
\elif :build
COMMENT ON INDEX messenger.ix_call_due IS 'Added by call_timeout_reaper: the due rule''s index (indexes/ix_call_due).';
\endif
\endif
\endif
