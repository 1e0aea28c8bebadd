-- Fixture, included with \ir by scripts/test-in-cluster (not a test): what a deploy + revert
-- must give back, as the view reaper_revert.cluster_state, one line per fact:
--   role ...     the reaper's roles
--   setting ...  every per-database/per-role setting (pg_db_role_setting)
--   cron grant . every grant on schema cron and its objects to a named role (pg_cron's own
--                grants to PUBLIC and its owner excluded: the extension stays installed)
-- Schema reaper_revert is the test's own (outside messenger, which the revert drops);
-- tests/revert/reverted.sql compares the view with the copy taken before the deploy.
CREATE SCHEMA IF NOT EXISTS reaper_revert;
CREATE OR REPLACE VIEW reaper_revert.cluster_state (fact) AS
SELECT 'role ' || r.rolname FROM pg_catalog.pg_roles AS r WHERE r.rolname LIKE 'messenger\_call\_reaper%'
UNION ALL
SELECT 'setting ' || coalesce(d.datname, '(all)') || ' ' || coalesce(r.rolname, '(all)') || ' '
       || pg_catalog.array_to_string(s.setconfig, ',')
  FROM pg_catalog.pg_db_role_setting AS s
  LEFT JOIN pg_catalog.pg_database AS d ON d.oid = s.setdatabase
  LEFT JOIN pg_catalog.pg_roles AS r ON r.oid = s.setrole
UNION ALL
SELECT 'cron grant ' || o.name || ' to ' || pg_catalog.pg_get_userbyid(a.grantee) || ' ' || a.privilege_type
  FROM (SELECT n.nspname::text AS name, n.nspacl AS acl, n.nspowner AS owner
          FROM pg_catalog.pg_namespace AS n WHERE n.nspname = 'cron'
        UNION ALL
        SELECT c.oid::pg_catalog.regclass::text, c.relacl, c.relowner
          FROM pg_catalog.pg_class AS c WHERE c.relnamespace = pg_catalog.to_regnamespace('cron')
        UNION ALL
        SELECT p.oid::pg_catalog.regprocedure::text, p.proacl, p.proowner
          FROM pg_catalog.pg_proc AS p WHERE p.pronamespace = pg_catalog.to_regnamespace('cron')) AS o
 CROSS JOIN LATERAL pg_catalog.aclexplode(o.acl) AS a
 WHERE a.grantee NOT IN (0, o.owner);
