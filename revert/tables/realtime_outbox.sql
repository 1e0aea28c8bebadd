-- Revert call_timeout_reaper:tables/realtime_outbox from pg

BEGIN;

DROP TABLE IF EXISTS messenger.realtime_outbox;

COMMIT;
