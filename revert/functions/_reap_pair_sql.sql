-- Revert call_timeout_reaper:functions/_reap_pair_sql from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger._reap_pair_sql(regproc, text, regclass, regclass, text[]);

COMMIT;
