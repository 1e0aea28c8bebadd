-- Deploy call_timeout_reaper:tables/call_reaper_counters to pg
-- v1.1.0: an idle cycle (it closed, poisoned, skipped and deferred nothing) leaves its run
-- ledger row and does not update this row, whose full new version is most of an idle cycle's
-- WAL. idle_folded_through says up to where the ledger's idle runs are counted here:
-- call_reaper_metrics adds the completed runs started after it, and the next cycle that
-- updates the row (any busy one, or an idle one an hour after the last fold) folds them in.
-- Folding hourly keeps those ledger rows well inside any retention (at least an hour).

BEGIN;

ALTER TABLE messenger.call_reaper_counters
    ADD COLUMN idle_folded_through timestamptz NOT NULL DEFAULT '-infinity';
UPDATE messenger.call_reaper_counters SET idle_folded_through = clock_timestamp();

COMMENT ON COLUMN messenger.call_reaper_counters.idle_folded_through IS
    'Idle runs of the ledger started up to here are counted in this row; later ones are added by call_reaper_metrics.';

COMMIT;
