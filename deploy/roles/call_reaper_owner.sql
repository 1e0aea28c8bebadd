-- Deploy call_timeout_reaper:roles/call_reaper_owner to pg
-- Owns the SECURITY DEFINER reaper, so the reaper runs with exactly the grants this role gets
-- (row access to two product tables and its own state), never with the deployer's superuser.
-- Roles are cluster-wide: a second messenger database in the same cluster reuses it.

BEGIN;

-- A role this deploy creates carries a marker naming the database in its comment; revert drops
-- only such a role (created here), never one that existed before and was adopted.
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'messenger_call_reaper_owner') THEN
        CREATE ROLE messenger_call_reaper_owner NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT;
        EXECUTE pg_catalog.format('COMMENT ON ROLE messenger_call_reaper_owner IS %L',
            'Owns messenger.reap_call_timeouts (SECURITY DEFINER); holds only the privileges the reaper needs. Created by the call_timeout_reaper deploy in database '
            || pg_catalog.current_database() || '.');
        -- A deployer that is not a superuser (a managed service's admin role) becomes a member of
        -- the role it created: it needs that to hand objects to it, SET ROLE to it and, on
        -- revert, DROP OWNED BY it. The membership goes with the role when revert drops it.
        IF NOT (SELECT r.rolsuper FROM pg_catalog.pg_roles AS r WHERE r.rolname = current_user) THEN
            EXECUTE pg_catalog.format('GRANT messenger_call_reaper_owner TO %I', current_user);
        END IF;
    END IF;
END
$$;
GRANT USAGE ON SCHEMA messenger TO messenger_call_reaper_owner;

COMMIT;
