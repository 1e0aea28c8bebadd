-- Verify call_timeout_reaper:functions/_reap_claim_retries on pg

BEGIN;

SELECT 'messenger._reap_claim_retries(text, text, timestamptz, timestamptz, integer)'::regprocedure;

ROLLBACK;
