-- Verify call_timeout_reaper:sequences/call_reaper_idle_cycle_at on pg
-- An unlogged sequence: its values are never WAL.

BEGIN;

SELECT 1 / count(*)
  FROM pg_catalog.pg_class AS c
 WHERE c.oid = 'messenger.call_reaper_idle_cycle_at'::regclass
   AND c.relkind = 'S'
   AND c.relpersistence = 'u';

ROLLBACK;
