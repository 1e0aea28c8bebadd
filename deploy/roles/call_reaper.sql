-- Deploy call_timeout_reaper:roles/call_reaper to pg
-- The pg_cron job runs as this role. LOGIN is required on PostgreSQL 15 even for background
-- workers; it gets no password here, so it cannot log in over the network until a DBA says so.
-- The role settings bound every cycle it runs: statement_timeout is the max run duration
-- (a function cannot bound its own running statement) and idle_in_transaction_session_timeout
-- is the lock TTL (an idle transaction holding the single-runner lock is terminated).

BEGIN;

DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'messenger_call_reaper') THEN
        CREATE ROLE messenger_call_reaper LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT;
    END IF;
END
$$;
ALTER ROLE messenger_call_reaper SET statement_timeout = '30s';
ALTER ROLE messenger_call_reaper SET idle_in_transaction_session_timeout = '1min';
COMMENT ON ROLE messenger_call_reaper IS 'Runs the call-timeout reaper (pg_cron job); may execute messenger.reap_call_timeouts and nothing more.';
GRANT USAGE ON SCHEMA messenger TO messenger_call_reaper;

COMMIT;
