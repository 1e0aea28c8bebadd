-- Deploy call_timeout_reaper:functions/_call_reaper_distributed to pg

BEGIN;

-- messenger._call_reaper_distributed()
--
-- Contract: whether messenger.call_sessions is a hash-distributed Citus table in this database,
-- so the cycle fans out over its shard pairs (messenger._reap_fanout) and the preview and the
-- metrics read the workers. The one home of that rule. Without Citus (no pg_dist_partition) one
-- lookup by name and no query; false for a Citus local or reference table.
-- The catalog through EXECUTE: it exists only where Citus does, and plpgsql_check parses a
-- constant EXECUTE against the server it runs on.
CREATE FUNCTION messenger._call_reaper_distributed()
RETURNS boolean
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_distributed boolean := false;
BEGIN
    IF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
        PERFORM 'PRAGMA:disable:check';
        EXECUTE 'SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_partition AS p WHERE p.logicalrelid = $1 AND p.partmethod = ''h'')'
           INTO v_distributed USING 'messenger.call_sessions'::regclass;
        PERFORM 'PRAGMA:enable:check';
    END IF;
    RETURN v_distributed;
END
$$;

COMMENT ON FUNCTION messenger._call_reaper_distributed() IS
    'Private: whether messenger.call_sessions is a hash-distributed Citus table here (the cycle then fans out over its shard pairs).';
REVOKE ALL ON FUNCTION messenger._call_reaper_distributed() FROM PUBLIC;
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER FUNCTION messenger._call_reaper_distributed() OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;
GRANT EXECUTE ON FUNCTION messenger._call_reaper_distributed() TO messenger_call_reaper_operator;

COMMIT;
