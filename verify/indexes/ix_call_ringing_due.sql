-- Verify call_timeout_reaper:indexes/ix_call_ringing_due on pg

BEGIN;

SELECT 'messenger.ix_call_ringing_due'::regclass;

ROLLBACK;
