-- Verify call_timeout_reaper:schema on pg

BEGIN;

SELECT pg_catalog.has_schema_privilege('messenger', 'USAGE');

ROLLBACK;
