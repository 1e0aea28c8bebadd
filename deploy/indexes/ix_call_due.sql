-- Deploy call_timeout_reaper:indexes/ix_call_due to pg
-- The one index of the due rule (messenger.call_due_key): active calls by (status, due key,
-- call_id). A phase's claim is `status = <phase status> AND call_due_key(...) <= cutoff ORDER BY
-- call_due_key(...), call_id`: a range scan from the phase's oldest due call that stops at the
-- cutoff or the batch size, so an idle cycle reads no entry of a live or archived call. status
-- leads so the two phases' keys (started_at, updated_at) never interleave: a Ringing claim
-- never walks live Answered calls. Partial on "has a due key" (= active), which any
-- `call_due_key(...) <= x` implies, so a query needs no second status test to use it.

BEGIN;

CREATE INDEX ix_call_due ON messenger.call_sessions
    (status, messenger.call_due_key(status, started_at, updated_at), call_id)
    WHERE messenger.call_due_key(status, started_at, updated_at) IS NOT NULL;

COMMIT;
