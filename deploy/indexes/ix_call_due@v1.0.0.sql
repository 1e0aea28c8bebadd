-- Deploy call_timeout_reaper:indexes/ix_call_due to pg
-- The one index of the due rule (messenger.call_due_key): active calls by (status, due key,
-- call_id). A phase's claim is `status = <phase status> AND call_due_key(...) <= cutoff ORDER BY
-- call_due_key(...), call_id`: a range scan from the phase's oldest due call that stops at the
-- cutoff or the batch size, so an idle cycle reads no entry of a live or archived call. status
-- leads so the two phases' keys (started_at, updated_at) never interleave: a Ringing claim
-- never walks live Answered calls. Partial on "has a due key" (= active), which any
-- `call_due_key(...) <= x` implies, so a query needs no second status test to use it.
--
-- Built online on the messenger service's live table: writers never wait for the build, which
-- itself waits for the transactions already running on the table.
-- No transaction: CREATE INDEX CONCURRENTLY cannot run in one.
--   * An interrupted build leaves an INVALID index behind, which IF NOT EXISTS would keep: it
--     is dropped first, so running the deploy again rebuilds it.
--   * A partitioned call_sessions cannot be indexed concurrently as a whole: the index is made
--     on the parent only (instant), each partition's is built concurrently and attached, and
--     partitions made later get theirs from the parent.
--   * The comment marks the index as the reaper's: revert drops only a marked one.
--   * The two steps that lock the product's table (ON ONLY: SHARE on the parent; ATTACH) wait
--     100 ms at a time and retry, so no writer queues longer behind them. Edited after the
--     release (an exception tests/released-deploy.sha256 names): it waited up to 5 s once, and a
--     fresh deploy still runs this file. messenger._call_reaper_with_lock_retries is a later
--     change, so each step is a DO block of the same loop; the end state is the same.

SELECT c.relkind = 'p' AS partitioned
  FROM pg_catalog.pg_class AS c WHERE c.oid = 'messenger.call_sessions'::pg_catalog.regclass \gset

SELECT pg_catalog.format('DROP INDEX CONCURRENTLY %s', x.oid::pg_catalog.regclass)
  FROM pg_catalog.pg_index AS i
  JOIN pg_catalog.pg_class AS x ON x.oid = i.indexrelid
 WHERE NOT i.indisvalid AND x.relkind = 'i'
   AND (x.oid = pg_catalog.to_regclass('messenger.ix_call_due')
        OR (x.relname LIKE '%\_ix\_call\_due'
            AND i.indrelid IN (SELECT h.inhrelid FROM pg_catalog.pg_inherits AS h
                                WHERE h.inhparent = 'messenger.call_sessions'::pg_catalog.regclass))) \gexec

\if :partitioned
-- A DO block per statement, not a function: this runs before any routine of the reaper exists
-- and needs no right but to run SQL (a temporary function would need TEMP on the database).
SELECT $t$DO $do$
BEGIN
    FOR v_try IN 1 .. 600 LOOP
        BEGIN
            PERFORM pg_catalog.set_config('lock_timeout', '100ms', true);
            EXECUTE %1$L;
            RETURN;
        EXCEPTION WHEN lock_not_available THEN
            PERFORM pg_catalog.pg_sleep(0.1 + 0.2 * pg_catalog.random());
        END;
    END LOOP;
    RAISE EXCEPTION 'no lock within 100 ms in 600 tries for: %%', %1$L
        USING ERRCODE = '55P03',
              HINT = 'A long transaction keeps the table locked: run sqitch again once it has ended.';
END
$do$$t$ AS lock_retries \gset
-- ON ONLY builds nothing; its brief SHARE lock on the parent is taken 100 ms at a time.
SELECT pg_catalog.format(:'lock_retries',
    'CREATE INDEX IF NOT EXISTS ix_call_due ON ONLY messenger.call_sessions'
    ' (status, messenger.call_due_key(status, started_at, updated_at), call_id)'
    ' WHERE messenger.call_due_key(status, started_at, updated_at) IS NOT NULL') \gexec
SELECT 'COMMENT ON INDEX messenger.ix_call_due IS ''Added by call_timeout_reaper: the due rule''''s index (indexes/ix_call_due).'''
 WHERE pg_catalog.obj_description('messenger.ix_call_due'::pg_catalog.regclass, 'pg_class') IS NULL \gexec
-- Partitions not yet covered by an attached index: build one online and attach it.
SELECT pg_catalog.format('CREATE INDEX CONCURRENTLY IF NOT EXISTS %I ON %s (status, messenger.call_due_key(status, started_at, updated_at), call_id) WHERE messenger.call_due_key(status, started_at, updated_at) IS NOT NULL',
                         pg_catalog.left(p.relname, 50) || '_ix_call_due', p.oid::pg_catalog.regclass),
       pg_catalog.format(:'lock_retries',
                         pg_catalog.format('ALTER INDEX messenger.ix_call_due ATTACH PARTITION %I.%I',
                                           n.nspname, pg_catalog.left(p.relname, 50) || '_ix_call_due'))
  FROM pg_catalog.pg_inherits AS h
  JOIN pg_catalog.pg_class AS p ON p.oid = h.inhrelid
  JOIN pg_catalog.pg_namespace AS n ON n.oid = p.relnamespace
 WHERE h.inhparent = 'messenger.call_sessions'::pg_catalog.regclass
   AND NOT EXISTS (SELECT FROM pg_catalog.pg_inherits AS a
                     JOIN pg_catalog.pg_index AS ai ON ai.indexrelid = a.inhrelid
                    WHERE a.inhparent = 'messenger.ix_call_due'::pg_catalog.regclass
                      AND ai.indrelid = p.oid)
 ORDER BY p.oid \gexec
\else
SELECT pg_catalog.to_regclass('messenger.ix_call_due') IS NULL AS build \gset
\if :build
CREATE INDEX CONCURRENTLY ix_call_due ON messenger.call_sessions
    (status, messenger.call_due_key(status, started_at, updated_at), call_id)
    WHERE messenger.call_due_key(status, started_at, updated_at) IS NOT NULL;
COMMENT ON INDEX messenger.ix_call_due IS 'Added by call_timeout_reaper: the due rule''s index (indexes/ix_call_due).';
\endif
\endif
