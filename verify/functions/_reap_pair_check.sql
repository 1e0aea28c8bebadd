-- Verify call_timeout_reaper:functions/_reap_pair_check on pg
-- That it exists (the cast raises otherwise); what it refuses: tests/pgtap/reap_pair_refused.sql,
-- reap_pair_settings.sql, reap_pair_outbox_id.sql.

BEGIN;

SELECT 'messenger._reap_pair_check(regclass, regclass, uuid, timestamptz, jsonb, integer)'::pg_catalog.regprocedure;

ROLLBACK;
