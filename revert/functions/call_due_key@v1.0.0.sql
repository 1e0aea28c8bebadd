-- Revert call_timeout_reaper:functions/call_due_key from pg

BEGIN;

-- A failed indexes/ix_call_due (Sqitch reverts only the changes before the one that failed)
-- can leave an index built on this function: on a partitioned table the parent's, or an
-- INVALID one. Whatever index depends on the reaper's function is the reaper's: it goes first.
DO $$
DECLARE
    v_index regclass;
BEGIN
    SET LOCAL lock_timeout = '10s';
    FOR v_index IN
        SELECT d.objid::regclass
          FROM pg_catalog.pg_depend AS d
          JOIN pg_catalog.pg_class AS c ON c.oid = d.objid
         WHERE d.classid = 'pg_catalog.pg_class'::regclass
           AND d.refclassid = 'pg_catalog.pg_proc'::regclass
           AND d.refobjid = pg_catalog.to_regprocedure('messenger.call_due_key(anyelement, timestamptz, timestamptz)')
           AND c.relkind IN ('i', 'I')
           AND NOT EXISTS (SELECT FROM pg_catalog.pg_inherits AS h WHERE h.inhrelid = c.oid)
    LOOP
        EXECUTE format('DROP INDEX IF EXISTS %s', v_index);
    END LOOP;
END
$$;
DROP FUNCTION IF EXISTS messenger.call_due_key(anyelement, timestamptz, timestamptz);

COMMIT;
