-- Revert call_timeout_reaper:functions/call_due_key from pg
-- No transaction: the indexes a failed indexes/ix_call_due left go online first.
-- Edited after its release, only so that it queues no product writer for long (README,
-- "Changing the schema"): it dropped them in one transaction under lock_timeout = 10s, each
-- plain DROP INDEX queueing the writers of its table behind any slow product transaction.
--
-- A failed indexes/ix_call_due (Sqitch reverts only the changes before the one that failed)
-- can leave an index built on this function: an INVALID one, a partition's not attached yet,
-- or on a partitioned table the parent's (its attached partitions' go with it). Whatever index
-- depends on the reaper's function is the reaper's: a plain one goes with DROP INDEX
-- CONCURRENTLY; a partitioned one cannot, and its DROP INDEX waits at most 100 ms a try for its
-- locks, retried (GitLab's with_lock_retries, inline: no helper of the reaper's exists here).

SELECT pg_catalog.format('DROP INDEX CONCURRENTLY IF EXISTS %s', c.oid::pg_catalog.regclass)
  FROM pg_catalog.pg_class AS c
 WHERE c.relkind = 'i'
   AND EXISTS (SELECT FROM pg_catalog.pg_depend AS d
                WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objid = c.oid
                  AND d.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass
                  AND d.refobjid = pg_catalog.to_regprocedure('messenger.call_due_key(anyelement, timestamptz, timestamptz)'))
   AND NOT EXISTS (SELECT FROM pg_catalog.pg_inherits AS h WHERE h.inhrelid = c.oid)
 ORDER BY c.oid \gexec

DO $$
DECLARE
    v_index regclass;
BEGIN
    FOR v_index IN
        SELECT c.oid::regclass
          FROM pg_catalog.pg_class AS c
         WHERE c.relkind = 'I'
           AND EXISTS (SELECT FROM pg_catalog.pg_depend AS d
                        WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objid = c.oid
                          AND d.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass
                          AND d.refobjid = pg_catalog.to_regprocedure('messenger.call_due_key(anyelement, timestamptz, timestamptz)'))
           AND NOT EXISTS (SELECT FROM pg_catalog.pg_inherits AS h WHERE h.inhrelid = c.oid)
    LOOP
        FOR v_try IN 1 .. 600 LOOP
            BEGIN
                SET LOCAL lock_timeout = '100ms';
                EXECUTE pg_catalog.format('DROP INDEX IF EXISTS %s', v_index);
                EXIT;
            EXCEPTION WHEN lock_not_available THEN
                IF v_try = 600 THEN
                    RAISE EXCEPTION 'no lock within 100 ms in 600 tries: % was not dropped', v_index
                        USING ERRCODE = '55P03',
                              HINT = 'A long transaction keeps the table locked: run sqitch again once it has ended.';
                END IF;
                PERFORM pg_catalog.pg_sleep(0.1 + 0.2 * pg_catalog.random());
            END;
        END LOOP;
    END LOOP;
END
$$;

DROP FUNCTION IF EXISTS messenger.call_due_key(anyelement, timestamptz, timestamptz);
