-- Deploy call_timeout_reaper:procedures/_reap_local_pairs to pg

BEGIN;

-- Contract: on a Citus worker, one cycle on each colocated shard pair of messenger.call_sessions
-- and messenger.realtime_outbox that this node holds, one messenger._reap_pair after another, each
-- committed on its own: a pair's closures and its outbox rows commit together, on this node, and
-- its claimed rows are held for that pair's cycle only. messenger._reap_fanout CALLs it on every
-- worker at once from the coordinator's cycle, under the coordinator's single-runner lock; an
-- operator may CALL it on a worker by hand.
-- Returns, in result, the node's sums as jsonb (missed_count, failed_count, skipped_locked_count,
-- poisoned_count, deferred_count, subtransactions, lag_seconds, pairs, moved, errors): jsonb, so
-- the coordinator reads it from run_command_on_workers' text. A pair that raises is rolled back
-- alone (its calls stay due) and named in errors with its sqlstate and message (DETAIL, which may
-- hold row values, is not); the other pairs go on.
--   p_run_id, p_as_of, p_settings  the coordinator's cycle's (messenger._reap_pair)
--   p_budget    most subtransactions a pair may open (each pair is a transaction of its own)
-- Shard moves: before its cycle a pair takes the lock a write through Citus takes on the shard's
-- placement metadata, which a move (citus_move_shard_placement, either transfer mode) needs
-- exclusively to copy or cut over, then checks that its placement is still on this node
-- (messenger._reap_local_pin). A move
-- under way or done is passed over (counted in "moved"): no closure or outbox row is ever written
-- to a placement that is being copied or has been left, so a push the dispatcher read is never
-- lost with an old placement and sent again (docs/citus.md).
-- The quarantine rows this node keeps of calls it no longer holds (a shard moved away, a call
-- the product deleted) are dropped once their backoff expired (messenger._reap_local_gone).
-- Each pair keeps its own claim floor in this node's messenger.call_reaper_claim_floor, keyed by
-- its calls shard; the rows of shards this node no longer holds are deleted first.
-- Errors: 55000 on a node without Citus metadata (plain PostgreSQL), nothing read or changed.
-- A procedure, SECURITY INVOKER and without a SET clause, because it commits (PostgreSQL allows
-- neither with COMMIT): Citus connects from the coordinator as the cycle's current user, the
-- owner, so it runs as the owner; every name in it is schema-qualified and pg_catalog is searched
-- first. EXECUTE for operators, never for the job role or PUBLIC.
CREATE PROCEDURE messenger._reap_local_pairs(
    p_run_id   uuid,
    p_as_of    timestamptz,
    p_settings jsonb,
    p_budget   integer,
    INOUT result jsonb DEFAULT NULL)
LANGUAGE plpgsql
AS $$
DECLARE
    v_pair    record;
    v_res     record;
    v_state   text;
    v_message text;
    v_missed  integer := 0;
    v_failed  integer := 0;
    v_skipped integer := 0;
    v_poison  integer := 0;
    v_deferred integer := 0;
    v_subxacts integer := 0;
    v_lags    double precision[] := '{}'::double precision[];
    v_pairs   integer := 0;
    v_moved   integer := 0;
    v_errors  jsonb := '[]'::jsonb;
    v_list    jsonb;
    v_probe   text;
    v_retry   boolean;
    v_pin     text;
BEGIN
    IF pg_catalog.to_regclass('pg_catalog.pg_dist_local_group') IS NULL THEN
        RAISE EXCEPTION 'messenger._reap_local_pairs runs on a Citus worker: this node has no Citus metadata'
            USING ERRCODE = '55000',
                  HINT = 'On one server the cycle is messenger.reap_call_timeouts().';
    END IF;
    -- The Citus catalogs exist only where Citus does (plpgsql_check parses a constant EXECUTE
    -- against the server it runs on, so not these).
    PERFORM 'PRAGMA:disable:check';
    -- Through EXECUTE: the Citus catalogs exist only where Citus does. The outbox shard of the
    -- same hash range on the same node is the call shard's colocated pair. Read once, as a list,
    -- so the loop below holds no cursor across its commits.
    EXECUTE $q$
        SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                   'calls_shard', c.shardid, 'outbox_shard', o.shardid,
                   'calls', pg_catalog.shard_name('messenger.call_sessions'::regclass, c.shardid),
                   'outbox', pg_catalog.shard_name('messenger.realtime_outbox'::regclass, o.shardid))
                   ORDER BY c.shardminvalue::integer), '[]'::jsonb)
          FROM pg_catalog.pg_dist_shard AS c
          JOIN pg_catalog.pg_dist_placement AS cp ON cp.shardid = c.shardid
          JOIN pg_catalog.pg_dist_shard AS o
            ON o.logicalrelid = 'messenger.realtime_outbox'::regclass AND o.shardminvalue = c.shardminvalue
          JOIN pg_catalog.pg_dist_placement AS op ON op.shardid = o.shardid AND op.groupid = cp.groupid
         WHERE c.logicalrelid = 'messenger.call_sessions'::regclass
           AND cp.groupid = (SELECT g.groupid FROM pg_catalog.pg_dist_local_group AS g)$q$
       INTO v_list;
    -- Whether a pair has anything to do: a call due in one of the phases (the due rule, on a
    -- range of ix_call_due's shape up to the phase's cutoff; the status as a literal, since the
    -- column may be the service's enum), the shard named per pair. Or a quarantined call whose
    -- backoff expired anywhere on this node: then every pair runs, so the retry lane also drops
    -- the rows of calls that are no longer due, as on one server.
    SELECT 'SELECT x.call_id FROM (' || pg_catalog.string_agg(pg_catalog.format(
               '(SELECT c.call_id FROM %%1$s AS c WHERE c.status = %L AND c.started_at <= %L::timestamptz'
               ' AND messenger.call_is_due(c.status, c.started_at, c.updated_at, %L::timestamptz) LIMIT 1)',
               r.status, p_as_of - (p_settings ->> r.timeout_setting)::interval,
               p_as_of - (p_settings ->> r.timeout_setting)::interval), ' UNION ALL ') || ') AS x LIMIT 1'
      INTO v_probe
      FROM messenger.call_reaper_phases() AS r;
    v_retry := EXISTS (SELECT FROM messenger.call_reaper_quarantine AS q WHERE q.next_attempt_at <= p_as_of);
    -- The claim floors of shards this node no longer holds (moved away, their relations dropped
    -- or left for Citus to drop): never found again, so they go rather than pile up.
    DELETE FROM messenger.call_reaper_claim_floor AS f
     WHERE f.calls::oid <> ALL (ARRAY(SELECT (e ->> 'calls')::regclass::oid FROM pg_catalog.jsonb_array_elements(v_list) AS e));
    FOR v_pair IN SELECT (e ->> 'calls_shard')::bigint AS calls_shard, (e ->> 'outbox_shard')::bigint AS outbox_shard,
                         e ->> 'calls' AS calls, e ->> 'outbox' AS outbox
                    FROM pg_catalog.jsonb_array_elements(v_list) AS e LOOP
        -- The move guard, and a pair with nothing to do passed over (messenger._reap_local_pin).
        v_pin := messenger._reap_local_pin(v_pair.calls::regclass, v_pair.calls_shard, v_pair.outbox_shard,
                                           v_probe, v_retry);
        CONTINUE WHEN v_pin = 'idle';
        IF v_pin = 'moved' THEN
            v_moved := v_moved + 1;
            COMMIT;
            CONTINUE;
        END IF;
        BEGIN
            v_res := messenger._reap_pair(v_pair.calls::regclass, v_pair.outbox::regclass, p_run_id, p_as_of,
                                          p_settings, p_budget, NULL);
            v_pairs := v_pairs + 1;
            v_missed := v_missed + v_res.missed_count;
            v_failed := v_failed + v_res.failed_count;
            v_skipped := v_skipped + v_res.skipped_locked_count;
            v_poison := v_poison + v_res.poisoned_count;
            v_deferred := v_deferred + v_res.deferred_count;
            v_subxacts := v_subxacts + v_res.subtransactions + 1;
            v_lags := v_lags || v_res.lag_seconds;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT;
            v_subxacts := v_subxacts + 1;
            v_errors := v_errors || pg_catalog.jsonb_build_object('pair', v_pair.calls, 'sqlstate', v_state, 'message', v_message);
        END;
        -- Outside the block: a block with an exception handler may not commit.
        COMMIT;
    END LOOP;
    -- The expired quarantine rows of calls this node no longer holds (messenger._reap_local_gone).
    IF v_retry THEN
        PERFORM messenger._reap_local_gone(p_run_id, p_as_of, v_list);
        COMMIT;
    END IF;
    PERFORM 'PRAGMA:enable:check';
    result := pg_catalog.jsonb_build_object('missed_count', v_missed, 'failed_count', v_failed,
                  'skipped_locked_count', v_skipped, 'poisoned_count', v_poison,
                  'deferred_count', v_deferred, 'subtransactions', v_subxacts,
                  'lag_seconds', pg_catalog.to_jsonb(v_lags), 'pairs', v_pairs, 'moved', v_moved,
                  'errors', v_errors);
END
$$;

COMMENT ON PROCEDURE messenger._reap_local_pairs(uuid, timestamptz, jsonb, integer, jsonb) IS
    'Private: on a Citus worker, one reaper cycle on each colocated shard pair this node holds (messenger._reap_pair), each committed on its own; the node''s sums as jsonb. 55000 without Citus.';
REVOKE ALL ON PROCEDURE messenger._reap_local_pairs(uuid, timestamptz, jsonb, integer, jsonb) FROM PUBLIC;
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER PROCEDURE messenger._reap_local_pairs(uuid, timestamptz, jsonb, integer, jsonb)
    OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;
GRANT EXECUTE ON PROCEDURE messenger._reap_local_pairs(uuid, timestamptz, jsonb, integer, jsonb)
    TO messenger_call_reaper_operator;

COMMIT;
