-- Revert call_timeout_reaper:grants/call_sessions from pg

BEGIN;

REVOKE UPDATE (status, end_reason, ended_at, updated_at, duration_seconds)
    ON messenger.call_sessions FROM messenger_call_reaper_owner;
REVOKE SELECT ON messenger.call_sessions FROM messenger_call_reaper_owner;

COMMIT;
