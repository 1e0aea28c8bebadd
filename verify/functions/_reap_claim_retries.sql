-- Verify call_timeout_reaper:functions/_reap_claim_retries on pg
-- It exists and reads the due rule messenger.call_is_due.

BEGIN;

DO $$
BEGIN
    IF (SELECT p.prosrc NOT LIKE '%messenger.call_is_due(%' FROM pg_catalog.pg_proc AS p
         WHERE p.oid = 'messenger._reap_claim_retries(text, text, timestamptz, timestamptz, integer, regclass)'::pg_catalog.regprocedure) THEN
        RAISE EXCEPTION 'messenger._reap_claim_retries does not claim by messenger.call_is_due';
    END IF;
END
$$;

ROLLBACK;
