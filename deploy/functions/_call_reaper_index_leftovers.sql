-- Deploy call_timeout_reaper:functions/_call_reaper_index_leftovers to pg

BEGIN;

-- messenger._call_reaper_index_leftovers()
--
-- What a build of the reaper's that failed or was cancelled left on the product's tables: each
-- index recorded in messenger.call_reaper_indexes, still of its recorded shape, that is INVALID
-- (a CREATE INDEX CONCURRENTLY stopped at one of its waits, or a partitioned index whose
-- partitions are not all attached) or is a partition's index attached to nothing. One row per
-- leftover: the statement that drops it (DROP INDEX CONCURRENTLY; a partitioned index cannot
-- be, so a plain DROP INDEX through messenger._call_reaper_with_lock_retries) and the one that
-- forgets its record, for psql's \gexec; partitions' indexes first. Records of indexes that are
-- gone, or have another shape now (not the reaper's any more), are forgotten on the way.
-- Run first by every index change's deploy and by its revert (what Sqitch runs after that
-- deploy failed), so nothing of a failed build survives.
CREATE FUNCTION messenger._call_reaper_index_leftovers()
RETURNS TABLE (drop_statement text, forget_statement text)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    DELETE FROM messenger.call_reaper_indexes AS r
     WHERE messenger._call_reaper_index_shape(
               pg_catalog.to_regclass(pg_catalog.format('%I.%I', r.index_schema, r.index_name))) IS DISTINCT FROM r.shape;
    RETURN QUERY
    SELECT CASE WHEN c.relkind = 'I'
                THEN pg_catalog.format('SELECT messenger._call_reaper_with_lock_retries(%L)',
                                       pg_catalog.format('DROP INDEX %s', c.oid::regclass))
                ELSE pg_catalog.format('DROP INDEX CONCURRENTLY %s', c.oid::regclass) END,
           pg_catalog.format('DELETE FROM messenger.call_reaper_indexes WHERE (index_schema, index_name) = (%L, %L)',
                             r.index_schema, r.index_name)
      FROM messenger.call_reaper_indexes AS r
      JOIN pg_catalog.pg_class AS c
        ON c.oid = pg_catalog.to_regclass(pg_catalog.format('%I.%I', r.index_schema, r.index_name))
      JOIN pg_catalog.pg_index AS i ON i.indexrelid = c.oid
     WHERE NOT i.indisvalid
        OR (r.attach_to IS NOT NULL
            AND NOT EXISTS (SELECT FROM pg_catalog.pg_inherits AS h WHERE h.inhrelid = c.oid))
     ORDER BY c.relkind = 'I', c.oid;
END
$$;

REVOKE EXECUTE ON FUNCTION messenger._call_reaper_index_leftovers() FROM PUBLIC;

COMMENT ON FUNCTION messenger._call_reaper_index_leftovers() IS
$$The reaper's unfinished index builds (recorded in call_reaper_indexes, INVALID or a partition's index attached to nothing): per leftover, the statement that drops it and the one that forgets its record, for psql's \gexec.$$;

COMMIT;
