-- Revert call_timeout_reaper:functions/_call_reaper_index_claim from pg

BEGIN;

DROP FUNCTION IF EXISTS messenger._call_reaper_index_claim(text, regclass, name, text, boolean, name);

COMMIT;
