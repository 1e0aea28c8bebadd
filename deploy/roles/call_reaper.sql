-- Deploy call_timeout_reaper:roles/call_reaper to pg
-- The pg_cron job runs as this role. LOGIN is required on PostgreSQL 15 even for background
-- workers; it gets no password here, so it cannot log in over the network until a DBA says so.
-- The role settings bound every cycle it runs: statement_timeout is the max run duration
-- (a function cannot bound its own running statement) and idle_in_transaction_session_timeout
-- is the lock TTL (an idle transaction holding the single-runner lock is terminated); the lock
-- warden (cron/call_reaper_warden) bounds busy holders. On PostgreSQL 17+ transaction_timeout
-- = the lock TTL bounds a whole transaction of this role, busy or idle, with or without the
-- warden (a reaper scheduled from outside has none). It gets nothing of pg_cron.

BEGIN;

-- A role this deploy creates carries a marker naming the database in its comment; revert drops
-- only such a role (created here), never one that existed before and was adopted.
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'messenger_call_reaper') THEN
        CREATE ROLE messenger_call_reaper LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT;
        EXECUTE pg_catalog.format('COMMENT ON ROLE messenger_call_reaper IS %L',
            'Runs the call-timeout reaper (pg_cron job); may execute messenger.reap_call_timeouts and nothing more. Created by the call_timeout_reaper deploy in database '
            || pg_catalog.current_database() || '.');
        -- A deployer that is not a superuser (a managed service's admin role) becomes a member of
        -- the role it created: it needs that to hand objects to it, SET ROLE to it and, on
        -- revert, DROP OWNED BY it. The membership goes with the role when revert drops it.
        IF NOT (SELECT r.rolsuper FROM pg_catalog.pg_roles AS r WHERE r.rolname = current_user) THEN
            EXECUTE pg_catalog.format('GRANT messenger_call_reaper TO %I', current_user);
        END IF;
    END IF;
END
$$;
ALTER ROLE messenger_call_reaper SET statement_timeout = '30s';
ALTER ROLE messenger_call_reaper SET idle_in_transaction_session_timeout = '1min';
DO $$
BEGIN
    IF pg_catalog.current_setting('server_version_num')::integer >= 170000 THEN
        ALTER ROLE messenger_call_reaper SET transaction_timeout = '1min';
    END IF;
END
$$;
GRANT USAGE ON SCHEMA messenger TO messenger_call_reaper;

COMMIT;
