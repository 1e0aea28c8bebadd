-- Verify call_timeout_reaper:tables/call_reaper_indexes on pg

BEGIN;

SELECT index_schema, index_name, on_table, change, shape, attach_to, recorded_at
  FROM messenger.call_reaper_indexes
 WHERE false;

ROLLBACK;
