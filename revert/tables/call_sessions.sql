-- Revert call_timeout_reaper:tables/call_sessions from pg

BEGIN;

DROP TABLE IF EXISTS messenger.call_sessions;

COMMIT;
