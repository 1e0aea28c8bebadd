-- Verify call_timeout_reaper:functions/_call_reaper_index_claim on pg

BEGIN;

SELECT 1 / (NOT pg_catalog.has_function_privilege('public',
                'messenger._call_reaper_index_claim(text, regclass, name, text, boolean, name)', 'EXECUTE'))::integer;

ROLLBACK;
