-- Verify call_timeout_reaper:functions/_call_reaper_index_leftovers on pg

BEGIN;

SELECT 1 / (NOT pg_catalog.has_function_privilege('public', 'messenger._call_reaper_index_leftovers()', 'EXECUTE'))::integer;

ROLLBACK;
