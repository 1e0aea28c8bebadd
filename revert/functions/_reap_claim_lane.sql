-- Revert call_timeout_reaper:functions/_reap_claim_lane from pg
-- Back to the released routine (v1.1.0, v1.2.0), on call_due_key without a cutoff parameter:
-- this signature goes first, then the released deploy script creates that one.

BEGIN;

DROP FUNCTION IF EXISTS messenger._reap_claim_lane(text, timestamptz, timestamptz, uuid, timestamptz, uuid, uuid[], boolean, integer, regclass);

COMMIT;

\ir ../../deploy/functions/_reap_claim_lane@v1.1.0.sql
