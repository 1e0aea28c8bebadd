-- Revert call_timeout_reaper:functions/_reap_ledger from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger._reap_ledger(messenger.call_reaper_cycle, timestamptz, messenger.call_reaper_settings, double precision[], integer, integer, text, text);

COMMIT;
