-- Verify call_timeout_reaper:functions/_reap_pair_sql on pg
-- That it exists (the cast raises otherwise); what it returns: tests/pgtap/pair_sql.sql.

BEGIN;

SELECT 'messenger._reap_pair_sql(regproc, text, regclass, regclass, text[])'::pg_catalog.regprocedure;

ROLLBACK;
