-- Revert call_timeout_reaper:functions/_reap_apply from pg
-- Back to the released routine (v1.1.0, v1.2.0): the signature with the pair's relations
-- dropped, the released deploy script makes it again.

BEGIN;

DROP FUNCTION IF EXISTS messenger._reap_apply(text, uuid[], timestamptz[], timestamptz[], uuid, timestamptz, regclass, regclass);

COMMIT;

\ir ../../deploy/functions/_reap_apply@v1.1.0.sql
