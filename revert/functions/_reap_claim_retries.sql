-- Revert call_timeout_reaper:functions/_reap_claim_retries from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger._reap_claim_retries(text, text, timestamptz, timestamptz, integer, regclass);

COMMIT;
