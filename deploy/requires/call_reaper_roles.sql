-- Deploy call_timeout_reaper:requires/call_reaper_roles to pg
-- The reaper's roles are cluster-wide, and a role under one of their names may exist before a
-- deploy (made by a DBA, by another tool, or by the reaper's deploy into another database of
-- the cluster). Such a role is adopted only if it is one the reaper could have created; else
-- this refuses, changing nothing, with SQLSTATE 55000 and one DETAIL line per mismatch:
--   * any reaper role that is SUPERUSER, BYPASSRLS or REPLICATION (the SECURITY DEFINER
--     routines would run with it, or the job would), or that can LOGIN where the reaper's is
--     NOLOGIN (messenger_call_reaper_owner, messenger_call_reaper_operator), except the owner
--     in a database with the citus extension: Citus reaches the workers as the current user, so
--     the fan-out needs an owner that can log in there (docs/citus.md; no password: the
--     cluster's node authentication admits it);
--   * a role not created by the deploy into this database (no marker naming it in the role's
--     comment) that has members other than the deploying role (the one membership the reaper
--     gives) or is itself a member of any role. Members of messenger_call_reaper_operator are
--     the team's to give (README, Roles), so they are not counted;
--   * messenger_call_reaper_owner holding CREATE on schema messenger: every routine change
--     grants it CREATE for its ALTER ... OWNER and revokes it again, which would take away a
--     grant the reaper never made (and a role that can create in the product's schema is not
--     the least-privileged owner the SECURITY DEFINER routines rely on).
-- The Citus exception: in a database with the citus extension the owner may LOGIN, which the
-- fan-out needs (a second database of the cluster, a redeploy, a verify must pass there).
-- Planned right after the role changes and before any change grants or revokes anything, so a
-- refusal has Sqitch revert only what those created (docs/design.md, "Adopted roles").
-- No transaction of its own: it is read-only, and verify/requires/call_reaper_roles.sql
-- includes it to run the same check.

DO $$
DECLARE
    v_marker   text := 'Created by the call_timeout_reaper deploy in database '
                       || pg_catalog.current_database() || '.';
    v_problems text[] := '{}';
    v_citus    boolean := EXISTS (SELECT FROM pg_catalog.pg_extension AS x WHERE x.extname = 'citus');
    r          record;
    m          record;
BEGIN
    FOR r IN
        SELECT a.oid, a.rolname::text AS name, a.rolsuper, a.rolbypassrls, a.rolreplication,
               a.rolcanlogin, e.login AS login_expected,
               pg_catalog.strpos(coalesce(pg_catalog.shobj_description(a.oid, 'pg_authid'), ''),
                                 v_marker) > 0 AS created_here
          FROM (VALUES ('messenger_call_reaper_owner', false), ('messenger_call_reaper', true),
                       ('messenger_call_reaper_monitor', true),
                       ('messenger_call_reaper_operator', false)) AS e (name, login)
          JOIN pg_catalog.pg_roles AS a ON a.rolname = e.name
         ORDER BY e.name
    LOOP
        IF r.rolsuper THEN
            v_problems := v_problems || pg_catalog.format('role %s is SUPERUSER', r.name);
        END IF;
        IF r.rolbypassrls THEN
            v_problems := v_problems || pg_catalog.format('role %s has BYPASSRLS', r.name);
        END IF;
        IF r.rolreplication THEN
            v_problems := v_problems || pg_catalog.format('role %s has REPLICATION', r.name);
        END IF;
        IF r.rolcanlogin AND NOT r.login_expected
           AND NOT (v_citus AND r.name = 'messenger_call_reaper_owner') THEN
            v_problems := v_problems || pg_catalog.format('role %s can LOGIN; the reaper''s is NOLOGIN', r.name);
        END IF;
        IF NOT r.created_here THEN
            FOR m IN
                SELECT pg_catalog.pg_get_userbyid(g.member)::text AS member
                  FROM pg_catalog.pg_auth_members AS g
                 WHERE g.roleid = r.oid AND g.member <> (SELECT u.oid FROM pg_catalog.pg_roles AS u WHERE u.rolname = current_user)
                   AND r.name <> 'messenger_call_reaper_operator'
                 ORDER BY 1
            LOOP
                v_problems := v_problems || pg_catalog.format(
                    'role %s has member %s, which the reaper did not make one', r.name, m.member);
            END LOOP;
            FOR m IN
                SELECT pg_catalog.pg_get_userbyid(g.roleid)::text AS role
                  FROM pg_catalog.pg_auth_members AS g WHERE g.member = r.oid ORDER BY 1
            LOOP
                v_problems := v_problems || pg_catalog.format(
                    'role %s is a member of %s, which the reaper never grants', r.name, m.role);
            END LOOP;
        END IF;
        IF r.name = 'messenger_call_reaper_owner'
           AND EXISTS (SELECT FROM pg_catalog.pg_namespace AS n
                        CROSS JOIN LATERAL pg_catalog.aclexplode(n.nspacl) AS x
                        WHERE n.nspname = 'messenger' AND x.grantee = r.oid AND x.privilege_type = 'CREATE') THEN
            v_problems := v_problems || pg_catalog.format(
                'role %s may CREATE in schema messenger; the reaper''s routine changes would revoke that grant', r.name);
        END IF;
    END LOOP;

    IF pg_catalog.cardinality(v_problems) > 0 THEN
        RAISE EXCEPTION 'roles under the reaper''s names are not roles it would create (% mismatches); nothing was changed',
            pg_catalog.cardinality(v_problems)
            USING ERRCODE = '55000',
                  DETAIL = pg_catalog.array_to_string(v_problems, E'\n'),
                  HINT = 'Change each role to what README "Deploy into an existing database" item 2 says, or drop it so the deploy creates its own.';
    END IF;
END
$$;
