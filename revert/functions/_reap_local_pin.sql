-- Revert call_timeout_reaper:functions/_reap_local_pin from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger._reap_local_pin(regclass, bigint, bigint, text, boolean);

COMMIT;
