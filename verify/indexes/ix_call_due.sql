-- Verify call_timeout_reaper:indexes/ix_call_due on pg

BEGIN;

SELECT 'messenger.ix_call_due'::regclass;

ROLLBACK;
