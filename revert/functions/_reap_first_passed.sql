-- Revert call_timeout_reaper:functions/_reap_first_passed from pg
-- Back to the released routine (v1.1.0, v1.2.0), on call_due_key and the default pair only:
-- this one goes first (the signature differs), then the released deploy script creates it.

BEGIN;

DROP FUNCTION IF EXISTS messenger._reap_first_passed(text, timestamptz, uuid, timestamptz, uuid, uuid[], boolean, regclass);

COMMIT;

\ir ../../deploy/functions/_reap_first_passed@v1.1.0.sql
