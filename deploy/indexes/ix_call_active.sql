-- Deploy call_timeout_reaper:indexes/ix_call_active to pg
-- The design document's index of active calls (for the product's own "my active call" lookups
-- and backlog counts). The reaper's claims use ix_call_due, which orders by the due rule.

BEGIN;

CREATE INDEX ix_call_active ON messenger.call_sessions (status, started_at)
    WHERE status IN ('Ringing', 'Answered');

COMMIT;
