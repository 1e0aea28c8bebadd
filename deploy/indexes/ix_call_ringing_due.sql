-- Deploy call_timeout_reaper:indexes/ix_call_ringing_due to pg
-- Ring-timeout claim: `status = 'Ringing' AND started_at <= cutoff ORDER BY started_at, call_id`
-- is a range scan from the oldest Ringing call that stops at the cutoff or the batch size, so
-- an idle cycle reads no row however many calls are active or archived.

BEGIN;

CREATE INDEX ix_call_ringing_due ON messenger.call_sessions (started_at, call_id)
    WHERE status = 'Ringing';

COMMIT;
