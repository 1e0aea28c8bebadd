-- Deploy call_timeout_reaper:roles/call_reaper_operator to pg
-- The DBA verbs with arguments: a cycle with its own batch size, timeouts or as_of, a drain, a
-- tick at an as_of, the preview, pause and resume, the status. A team grants this role to its
-- DBAs (GRANT messenger_call_reaper_operator TO alice) so they can steer the reaper without
-- owning it and without any right on the product's tables: what the verbs change, they change
-- as the SECURITY DEFINER owner, by the reaper's rules. The job role is never a member: it may
-- run only the configured cycle (messenger._reap_cycle refuses it anything else). NOLOGIN: it is
-- a set of rights, not a credential. Its grants on the verbs: grants/call_reaper_operator.

BEGIN;

-- A role this deploy creates carries a marker naming the database in its comment; revert drops
-- only such a role (created here), never one that existed before and was adopted.
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'messenger_call_reaper_operator') THEN
        CREATE ROLE messenger_call_reaper_operator NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT;
        EXECUTE pg_catalog.format('COMMENT ON ROLE messenger_call_reaper_operator IS %L',
            'Operators of the call-timeout reaper: its DBA verbs with arguments (cycle, drain, preview, pause, status), no product table. Created by the call_timeout_reaper deploy in database '
            || pg_catalog.current_database() || '.');
        -- A deployer that is not a superuser (a managed service's admin role) becomes a member of
        -- the role it created, so it keeps the verbs with arguments and can grant the role on.
        IF NOT (SELECT r.rolsuper FROM pg_catalog.pg_roles AS r WHERE r.rolname = current_user) THEN
            EXECUTE pg_catalog.format('GRANT messenger_call_reaper_operator TO %I', current_user);
        END IF;
    END IF;
END
$$;
-- USAGE on schema messenger only where the role lacks it (an adopted role may hold it from the
-- messenger service), recorded so that the revert revokes a grant of the reaper's and no other.
DO $$
BEGIN
    IF NOT pg_catalog.has_schema_privilege('messenger_call_reaper_operator', 'messenger', 'USAGE') THEN
        GRANT USAGE ON SCHEMA messenger TO messenger_call_reaper_operator;
        INSERT INTO messenger.call_reaper_footprint (kind, target, item, set_by)
        VALUES ('grant', 'SCHEMA messenger', 'USAGE TO messenger_call_reaper_operator', 'roles/call_reaper_operator');
    END IF;
END
$$;

COMMIT;
