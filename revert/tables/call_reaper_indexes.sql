-- Revert call_timeout_reaper:tables/call_reaper_indexes from pg
-- The records only: the index changes' reverts, planned after this one, have dropped every
-- unfinished build they list; what is left valid is v1.1.0's (its own reverts drop it).

BEGIN;

DROP TABLE IF EXISTS messenger.call_reaper_indexes;

COMMIT;
