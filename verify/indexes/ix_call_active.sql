-- Verify call_timeout_reaper:indexes/ix_call_active on pg

BEGIN;

SELECT 'messenger.ix_call_active'::regclass;

ROLLBACK;
