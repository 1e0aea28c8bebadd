-- Deploy call_timeout_reaper:grants/call_sessions to pg
-- The reaper's owner may read calls and write only the columns a closure sets. The deployer
-- grants as the table's owner or as a member of the role that owns it (the messenger
-- service's); revert/grants/call_sessions.sql revokes exactly these.

BEGIN;

GRANT SELECT ON messenger.call_sessions TO messenger_call_reaper_owner;
GRANT UPDATE (status, end_reason, ended_at, updated_at, duration_seconds)
    ON messenger.call_sessions TO messenger_call_reaper_owner;

COMMIT;
