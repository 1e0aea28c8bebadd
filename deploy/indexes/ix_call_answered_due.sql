-- Deploy call_timeout_reaper:indexes/ix_call_answered_due to pg
-- Stale-answered claim: `status = 'Answered' AND updated_at <= cutoff ORDER BY updated_at,
-- call_id`. Keyed on updated_at (the due time) so the claim never walks live calls; ordering
-- that phase by started_at instead would sort the whole stale backlog every cycle.

BEGIN;

CREATE INDEX ix_call_answered_due ON messenger.call_sessions (updated_at, call_id)
    WHERE status = 'Answered';

COMMIT;
