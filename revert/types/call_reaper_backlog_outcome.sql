-- Revert call_timeout_reaper:types/call_reaper_backlog_outcome from pg

BEGIN;

DROP TYPE IF EXISTS messenger.call_reaper_backlog_outcome;

COMMIT;
