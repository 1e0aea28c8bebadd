-- Revert call_timeout_reaper:functions/_reap_ledger from pg
-- Back to the released function by its own deploy script. That script CREATEs it (no OR
-- REPLACE), so the function is dropped first in the same transaction: the script's BEGIN only
-- warns inside it and its COMMIT ends both. It has no grant to give back (its callers run as
-- its owner).

BEGIN;

DROP FUNCTION messenger._reap_ledger(messenger.call_reaper_cycle, timestamptz, messenger.call_reaper_settings,
                                     double precision[], integer, integer, text, text);

\ir ../../deploy/functions/_reap_ledger@v2.0.0.sql
