-- Revert call_timeout_reaper:procedures/drain_call_timeouts from pg
-- Back to the released procedure (v1.1.0 and v1.2.0), whose signature has no duty_cycle: this one goes first, the
-- EXECUTE grants it holds are remembered for the session and given back to the released one.

BEGIN;

CREATE TEMPORARY TABLE drain_call_timeouts_grants AS
SELECT x.grantee::pg_catalog.regrole::text AS grantee, x.is_grantable
  FROM pg_catalog.pg_proc AS p CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) AS x
 WHERE p.oid = pg_catalog.to_regprocedure('messenger.drain_call_timeouts(integer, integer, interval, interval, timestamptz, real, integer, bigint, bigint)')
   AND x.privilege_type = 'EXECUTE' AND x.grantee <> 0 AND x.grantee <> p.proowner;

DROP PROCEDURE IF EXISTS messenger.drain_call_timeouts(integer, integer, interval, interval, timestamptz, real, integer, bigint, bigint);

COMMIT;

\ir ../../deploy/procedures/drain_call_timeouts@v1.1.0.sql

BEGIN;

-- The EXECUTE grants remembered above, given back to this signature (\gexec runs each GRANT).
SELECT pg_catalog.format('GRANT EXECUTE ON PROCEDURE messenger.drain_call_timeouts(integer, integer, interval, interval, timestamptz, integer, bigint, bigint) TO %s%s',
                         g.grantee, CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END)
  FROM pg_temp.drain_call_timeouts_grants AS g \gexec

DROP TABLE pg_temp.drain_call_timeouts_grants;

COMMIT;
