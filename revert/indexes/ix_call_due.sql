-- Revert call_timeout_reaper:indexes/ix_call_due from pg

BEGIN;

DROP INDEX IF EXISTS messenger.ix_call_due;

COMMIT;
