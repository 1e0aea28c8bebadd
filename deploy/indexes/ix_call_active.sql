-- Deploy call_timeout_reaper:indexes/ix_call_active to pg
-- The design document's index of active calls (for the product's own "my active call" lookups
-- and backlog counts). The reaper's claims use the narrower per-phase indexes beside it.

BEGIN;

CREATE INDEX ix_call_active ON messenger.call_sessions (status, started_at)
    WHERE status IN ('Ringing', 'Answered');

COMMIT;
