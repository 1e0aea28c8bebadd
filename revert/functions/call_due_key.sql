-- Revert call_timeout_reaper:functions/call_due_key from pg
-- The reaper builds no index on the function; one that uses it is the messenger service's, and
-- DROP FUNCTION would refuse anyway (2BP01): this stops first, naming the indexes (55000), so
-- that nothing of the revert runs past it.

BEGIN;

DO $$
DECLARE
    v_indexes text;
BEGIN
    SELECT pg_catalog.string_agg(DISTINCT d.objid::pg_catalog.regclass::text, ', ' ORDER BY d.objid::pg_catalog.regclass::text)
      INTO v_indexes
      FROM pg_catalog.pg_depend AS d
      JOIN pg_catalog.pg_class AS c ON c.oid = d.objid
     WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass
       AND d.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass
       AND d.refobjid = pg_catalog.to_regprocedure('messenger.call_due_key(anyelement, timestamptz, timestamptz)')
       AND c.relkind IN ('i', 'I')
       AND NOT EXISTS (SELECT FROM pg_catalog.pg_inherits AS h WHERE h.inhrelid = c.oid);
    IF v_indexes IS NOT NULL THEN
        RAISE EXCEPTION 'messenger.call_due_key is used by an index that is not the reaper''s: %; nothing was reverted', v_indexes
            USING ERRCODE = '55000',
                  DETAIL = 'Reverting the reaper drops messenger.call_due_key, which the index needs.',
                  HINT = 'Drop or redefine that index first (it is the messenger service''s), then revert again.';
    END IF;
END
$$;

DROP FUNCTION IF EXISTS messenger.call_due_key(anyelement, timestamptz, timestamptz);

COMMIT;
