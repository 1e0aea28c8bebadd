-- Deploy call_timeout_reaper:functions/_call_reaper_index_shape to pg

BEGIN;

-- messenger._call_reaper_index_shape(index)
--
-- What an index is, without what it is called or which table (or partition) it is on:
-- 'UNIQUE ' for a unique one, then pg_get_indexdef from USING on (method, keys, predicate).
-- A plain index and a partitioned one (ON ONLY) of the same definition, or a partition's
-- index, have the same shape. The reaper owns an index by record and shape
-- (messenger.call_reaper_indexes): a product index that happens to share the name has another
-- shape, or was never recorded. search_path is pinned so every name is deparsed qualified,
-- whatever the caller's search_path: shapes recorded in one session compare equal in another.
-- NULL for anything that is not an index.
CREATE FUNCTION messenger._call_reaper_index_shape(p_index regclass)
RETURNS text
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
SELECT CASE WHEN i.indisunique THEN 'UNIQUE ' ELSE '' END
       || pg_catalog.substring(pg_catalog.pg_get_indexdef(i.indexrelid), ' (USING .*)$')
  FROM pg_catalog.pg_index AS i
 WHERE i.indexrelid = p_index
$$;

REVOKE EXECUTE ON FUNCTION messenger._call_reaper_index_shape(regclass) FROM PUBLIC;

COMMENT ON FUNCTION messenger._call_reaper_index_shape(regclass) IS
$$An index's definition without its name and table ('UNIQUE ' if unique, then from USING on), deparsed with a pinned search_path; how the reaper's deploy and reverts tell its own index (recorded in call_reaper_indexes) from a product's of the same name.$$;

COMMIT;
