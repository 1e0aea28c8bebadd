-- Revert call_timeout_reaper:functions/call_due_key from pg
-- No transaction: the leftovers of a failed index build go with DROP INDEX CONCURRENTLY.
--   * An index that is not the reaper's (neither recorded in messenger.call_reaper_indexes with
--     its shape, nor marked by v1.1.0's comment) and uses call_due_key, a PUBLIC function a
--     product index may use: refused (55000) before anything changes. The v1.1.0 revert this
--     one leads to drops every index on the function.
--   * Sqitch runs this revert after indexes/ix_call_due failed (it never runs the failed
--     change's own): whatever that build left of the reaper's goes.
--   * Then the released definition is restored (the same function).
--   * Before the check: a part of the reaper's ix_call_due left on a partition that was detached
--     and kept (pg_partman's retention_keep_table, an archive) is a standalone index now, named
--     by the reaper (<partition>_ix_call_due) or by PostgreSQL (a partition made after the
--     deploy), recorded nowhere. It is the reaper's by definition: of the shape recorded for
--     ix_call_due, on this function, attached to nothing, on a table outside call_sessions'
--     partition tree (where the service's own index of that shape serves as ix_call_due,
--     nothing is recorded and nothing goes). It goes, online. Edited after its release, only so that the
--     revert no longer refuses over the reaper's own index (README, "Changing the schema").

SELECT pg_catalog.format('DROP INDEX CONCURRENTLY %s', c.oid::pg_catalog.regclass)
  FROM pg_catalog.pg_class AS c
  JOIN pg_catalog.pg_index AS i ON i.indexrelid = c.oid
  JOIN messenger.call_reaper_indexes AS r ON (r.index_schema, r.index_name) = ('messenger', 'ix_call_due')
 WHERE c.relkind = 'i'
   AND EXISTS (SELECT FROM pg_catalog.pg_depend AS d
                WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objid = c.oid
                  AND d.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass
                  AND d.refobjid = 'messenger.call_due_key(anyelement, timestamptz, timestamptz)'::pg_catalog.regprocedure)
   AND NOT EXISTS (SELECT FROM pg_catalog.pg_inherits AS h WHERE h.inhrelid = c.oid)
   AND i.indrelid <> 'messenger.call_sessions'::pg_catalog.regclass   -- a plain one has no partition tree
   AND i.indrelid NOT IN (SELECT t.relid FROM pg_catalog.pg_partition_tree('messenger.call_sessions') AS t)
   AND messenger._call_reaper_index_shape(c.oid) = r.shape
 ORDER BY c.oid \gexec

DO $$
DECLARE
    v_indexes text;
BEGIN
    -- DISTINCT: an index whose key and predicate both call the function depends on it twice.
    SELECT pg_catalog.string_agg(DISTINCT d.objid::pg_catalog.regclass::text, ', ' ORDER BY d.objid::pg_catalog.regclass::text)
      INTO v_indexes
      FROM pg_catalog.pg_depend AS d
      JOIN pg_catalog.pg_class AS c ON c.oid = d.objid
      JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
     WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass
       AND d.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass
       AND d.refobjid = 'messenger.call_due_key(anyelement, timestamptz, timestamptz)'::pg_catalog.regprocedure
       AND c.relkind IN ('i', 'I')
       AND NOT EXISTS (SELECT FROM pg_catalog.pg_inherits AS h WHERE h.inhrelid = c.oid)
       AND coalesce(pg_catalog.obj_description(c.oid, 'pg_class') NOT LIKE 'Added by call\_timeout\_reaper:%', true)
       AND NOT EXISTS (SELECT FROM messenger.call_reaper_indexes AS r
                        WHERE (r.index_schema, r.index_name) = (n.nspname, c.relname)
                          AND r.shape = messenger._call_reaper_index_shape(c.oid));
    IF v_indexes IS NOT NULL THEN
        RAISE EXCEPTION 'messenger.call_due_key is used by an index that is not the reaper''s: %; nothing was reverted', v_indexes
            USING ERRCODE = '55000',
                  DETAIL = 'Reverting the reaper further drops every index on messenger.call_due_key (the v1.1.0 revert of functions/call_due_key), the product''s included.',
                  HINT = 'Drop or redefine that index first (it is the messenger service''s), then revert again.';
    END IF;
END
$$;

SELECT l.drop_statement, l.forget_statement FROM messenger._call_reaper_index_leftovers() AS l \gexec

\ir ../../deploy/functions/call_due_key@v1.0.0.sql
