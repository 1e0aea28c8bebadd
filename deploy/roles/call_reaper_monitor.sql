-- Deploy call_timeout_reaper:roles/call_reaper_monitor to pg
-- The exporter connects as this role. It gets no password here: the DBA sets one (or a pg_hba
-- peer/cert rule) for the exporter's host. It reads counters through functions granted to it,
-- never call or outbox rows.

BEGIN;

-- A role this deploy creates carries a marker naming the database in its comment; revert drops
-- only such a role (created here), never one that existed before and was adopted.
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'messenger_call_reaper_monitor') THEN
        CREATE ROLE messenger_call_reaper_monitor LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT;
        EXECUTE pg_catalog.format('COMMENT ON ROLE messenger_call_reaper_monitor IS %L',
            'Prometheus exporter of the call-timeout reaper: read-only access to its counters and backlog. Created by the call_timeout_reaper deploy in database '
            || pg_catalog.current_database() || '.');
        -- A deployer that is not a superuser (a managed service's admin role) becomes a member of
        -- the role it created: it needs that to hand objects to it, SET ROLE to it and, on
        -- revert, DROP OWNED BY it. The membership goes with the role when revert drops it.
        IF NOT (SELECT r.rolsuper FROM pg_catalog.pg_roles AS r WHERE r.rolname = current_user) THEN
            EXECUTE pg_catalog.format('GRANT messenger_call_reaper_monitor TO %I', current_user);
        END IF;
    END IF;
END
$$;
GRANT USAGE ON SCHEMA messenger TO messenger_call_reaper_monitor;

COMMIT;
