-- Verify call_timeout_reaper:functions/_call_reaper_claim_indexes on pg
-- It answers for call_sessions (the indexes' own check is indexes/ix_call_due's verify).

BEGIN;

SELECT pg_catalog.count(*) FROM messenger._call_reaper_claim_indexes('messenger.call_sessions');

ROLLBACK;
