-- Verify call_timeout_reaper:indexes/ix_call_answered_due on pg

BEGIN;

SELECT 'messenger.ix_call_answered_due'::regclass;

ROLLBACK;
