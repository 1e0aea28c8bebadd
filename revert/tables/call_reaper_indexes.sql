-- Revert call_timeout_reaper:tables/call_reaper_indexes from pg
-- The records only: the index changes' reverts, planned after this one, have dropped every
-- index they list.

BEGIN;

DROP TABLE IF EXISTS messenger.call_reaper_indexes;

COMMIT;
