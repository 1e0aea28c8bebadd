-- Deploy call_timeout_reaper:roles/call_reaper_owner to pg
-- Owns the SECURITY DEFINER reaper, so the reaper runs with exactly the grants this role gets
-- (row access to two product tables and its own state), never with the deployer's superuser.
-- Roles are cluster-wide: a second messenger database in the same cluster reuses it.

BEGIN;

DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'messenger_call_reaper_owner') THEN
        CREATE ROLE messenger_call_reaper_owner NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT;
    END IF;
END
$$;
COMMENT ON ROLE messenger_call_reaper_owner IS 'Owns messenger.reap_call_timeouts (SECURITY DEFINER); holds only the privileges the reaper needs.';
GRANT USAGE ON SCHEMA messenger TO messenger_call_reaper_owner;

COMMIT;
