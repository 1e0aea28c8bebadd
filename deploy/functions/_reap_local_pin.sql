-- Deploy call_timeout_reaper:functions/_reap_local_pin to pg

BEGIN;

-- Contract: on a Citus worker, before a shard pair's cycle (messenger._reap_local_pairs): whether
-- the pair has anything to do and, if so, pins its placement on this node until the caller's
-- commit. Returns 'idle' (no due call and no retry: the pair is passed over without a cycle, so
-- an idle pair costs one probe per phase, not _reap_pair's checks and claims), 'moved' (a shard
-- move is under way or done: passed over, its calls stay due for the next cycle, wherever they
-- are then) or 'pinned'.
--   p_shard      the pair's calls shard (a relation of this node)
--   p_calls_shard, p_outbox_shard  the pair's shard ids
--   p_probe      the due-call probe, a format() text with the shard as %1$s (_reap_local_pairs)
--   p_retry      a quarantined call of this node is past its backoff: any call of the shard will do
-- The move guard: the pair's statements write the shards themselves, which Citus does not see;
-- a write through the distributed table takes a share lock on its shard's placement metadata
-- until commit, and a shard move or copy takes that lock exclusively while it copies
-- (block_writes) or cuts over (logical). So the pair first makes one routed write that changes
-- nothing (the call the probe found, a condition no row meets; through messenger.call_sessions,
-- the distributed table, on purpose, where the cycle's own statements name the shard): from then to its commit no move
-- can take the pair's placement away. A move under way makes it wait at most c_move_wait. Then
-- it checks that both placements are still on this node: no closure or outbox row is ever written
-- to a placement being copied or left behind (docs/citus.md).
-- SECURITY INVOKER, as _reap_local_pairs, which runs as the owner (or an operator by hand).
CREATE FUNCTION messenger._reap_local_pin(
    p_shard        regclass,
    p_calls_shard  bigint,
    p_outbox_shard bigint,
    p_probe        text,
    p_retry        boolean)
RETURNS text
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    c_move_wait constant text := '200ms';
    v_key  uuid;
    v_wait text;
    v_here boolean;
BEGIN
    -- The Citus catalogs exist only where Citus does (plpgsql_check parses a constant EXECUTE
    -- against the server it runs on, so not these).
    PERFORM 'PRAGMA:disable:check';
    EXECUTE format(p_probe, p_shard) INTO v_key;
    IF v_key IS NULL AND p_retry THEN
        EXECUTE format('SELECT c.call_id FROM %s AS c LIMIT 1', p_shard) INTO v_key;
    END IF;
    IF v_key IS NULL THEN
        RETURN 'idle';
    END IF;
    BEGIN
        v_wait := current_setting('lock_timeout');
        PERFORM set_config('lock_timeout', c_move_wait, true);
        EXECUTE 'UPDATE messenger.call_sessions AS c SET updated_at = c.updated_at WHERE c.call_id = $1 AND c.status IS NULL'
            USING v_key;
        PERFORM set_config('lock_timeout', v_wait, true);
    EXCEPTION WHEN lock_not_available THEN
        RETURN 'moved';
    END;
    EXECUTE $q$
        SELECT count(*) = 2 FROM pg_catalog.pg_dist_placement AS p
         WHERE p.shardid IN ($1, $2)
           AND p.groupid = (SELECT g.groupid FROM pg_catalog.pg_dist_local_group AS g)$q$
       INTO v_here USING p_calls_shard, p_outbox_shard;
    RETURN CASE WHEN v_here THEN 'pinned' ELSE 'moved' END;
END
$$;

COMMENT ON FUNCTION messenger._reap_local_pin(regclass, bigint, bigint, text, boolean) IS
    'Private: on a Citus worker, whether a shard pair has work (idle), and if so its placement pinned against a shard move until commit (pinned) or passed over (moved).';
REVOKE ALL ON FUNCTION messenger._reap_local_pin(regclass, bigint, bigint, text, boolean) FROM PUBLIC;
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER FUNCTION messenger._reap_local_pin(regclass, bigint, bigint, text, boolean) OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;
GRANT EXECUTE ON FUNCTION messenger._reap_local_pin(regclass, bigint, bigint, text, boolean) TO messenger_call_reaper_operator;

COMMIT;
