-- Revert call_timeout_reaper:schema from pg

BEGIN;

DROP SCHEMA IF EXISTS messenger;

COMMIT;
