-- Deploy call_timeout_reaper:functions/_reap_fanout to pg

BEGIN;

-- Contract: the phases of one cycle on a Citus coordinator whose messenger.call_sessions is
-- distributed: messenger._reap_local_pairs on every worker at once (run_command_on_workers, one
-- connection per worker, one transaction per shard pair), and the workers' sums added up, as
-- messenger._reap_pair returns them for one pair, plus the pairs cycled, the pairs passed over
-- as moved, and one line per worker that failed (NULL when none did).
-- Called by messenger._reap_cycle under its single-runner lock; the ledger and counters it writes
-- are the coordinator's. The workers commit on their own: a worker's closures and outbox rows are
-- kept whatever the coordinator does next, so a failure here is reported, not raised, and the
-- sums are those of the pairs that committed. A stopped or unreachable worker closes nothing and
-- leaves its calls due for the next cycle; a pair that raised is rolled back alone on its worker
-- (messenger._reap_local_pairs); the others go on.
-- The workers are reached as the current user, the owner (SECURITY DEFINER), which must be able
-- to log in to them: 55000 otherwise, before anything runs (docs/citus.md).
-- Errors: 55000 without Citus, or when messenger.call_sessions is not distributed.
CREATE FUNCTION messenger._reap_fanout(
    p_run_id   uuid,
    p_as_of    timestamptz,
    p_settings jsonb,
    p_budget   integer,
    OUT missed_count         integer,
    OUT failed_count         integer,
    OUT skipped_locked_count integer,
    OUT poisoned_count       integer,
    OUT deferred_count       integer,
    OUT subtransactions      integer,
    OUT lag_seconds          double precision[],
    OUT pairs                integer,
    OUT moved                integer,
    OUT failures             text)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
-- Its writes are the workers' (run_command_on_workers), which plpgsql_check cannot see:
-- @plpgsql_check_options: performance_warnings = false
DECLARE
    v_node      record;
    v_r         jsonb;
    v_nodes     jsonb;
    v_on_coordinator bigint;
    v_failures  text[] := '{}'::text[];
BEGIN
    IF NOT messenger._call_reaper_distributed() THEN
        RAISE EXCEPTION 'messenger._reap_fanout needs a Citus coordinator with messenger.call_sessions distributed'
            USING ERRCODE = '55000',
                  HINT = 'On one server the cycle runs messenger._reap_pair on the tables themselves.';
    END IF;
    IF NOT (SELECT r.rolcanlogin FROM pg_catalog.pg_roles AS r WHERE r.rolname = current_user) THEN
        RAISE EXCEPTION 'role % cannot log in, so Citus cannot reach the workers as it', current_user
            USING ERRCODE = '55000',
                  HINT = 'ALTER ROLE messenger_call_reaper_owner LOGIN (no password: the workers admit it by the cluster''s own node authentication), then SELECT * FROM messenger.call_reaper_citus_prepare(); see docs/citus.md.';
    END IF;
    missed_count := 0;
    failed_count := 0;
    skipped_locked_count := 0;
    poisoned_count := 0;
    deferred_count := 0;
    subtransactions := 0;
    lag_seconds := '{}'::double precision[];
    pairs := 0;
    moved := 0;
    -- The Citus catalogs and routines exist only where Citus does; plpgsql_check parses a
    -- constant EXECUTE against the server it runs on.
    PERFORM 'PRAGMA:disable:check';
    -- Shards the coordinator holds itself (a coordinator added with shouldhaveshards) are not
    -- reached by run_command_on_workers, and a procedure that commits cannot run inside this
    -- cycle: their calls would never close, so the run says so and fails.
    EXECUTE $q$SELECT count(*) FROM pg_catalog.pg_dist_shard AS s JOIN pg_catalog.pg_dist_placement AS p USING (shardid)
                WHERE s.logicalrelid = 'messenger.call_sessions'::regclass AND p.groupid = 0$q$
       INTO v_on_coordinator;
    -- Every worker at once (parallel), each with its own connection.
    EXECUTE 'SELECT pg_catalog.jsonb_agg(w) FROM pg_catalog.run_command_on_workers($1, true) AS w'
       INTO v_nodes
      USING format('CALL messenger._reap_local_pairs(%L::uuid, %L::timestamptz, %L::jsonb, %s)',
                   p_run_id, p_as_of, p_settings, p_budget);
    PERFORM 'PRAGMA:enable:check';
    FOR v_node IN SELECT w.nodename, w.nodeport, w.success, w.result
                    FROM jsonb_to_recordset(coalesce(v_nodes, '[]'::jsonb)) AS w (nodename text, nodeport integer, success boolean, result text) LOOP
        IF NOT v_node.success THEN
            v_failures := v_failures || format('%s:%s: %s', v_node.nodename, v_node.nodeport, v_node.result);
            CONTINUE;
        END IF;
        v_r := v_node.result::jsonb;
        subtransactions := subtransactions + (v_r ->> 'subtransactions')::integer;
        moved := moved + (v_r ->> 'moved')::integer;
        v_failures := v_failures || ARRAY(
            SELECT format('%s:%s %s: %s %s', v_node.nodename, v_node.nodeport, e ->> 'pair', e ->> 'sqlstate', e ->> 'message')
              FROM jsonb_array_elements(v_r -> 'errors') AS e);
        missed_count := missed_count + (v_r ->> 'missed_count')::integer;
        failed_count := failed_count + (v_r ->> 'failed_count')::integer;
        skipped_locked_count := skipped_locked_count + (v_r ->> 'skipped_locked_count')::integer;
        poisoned_count := poisoned_count + (v_r ->> 'poisoned_count')::integer;
        deferred_count := deferred_count + (v_r ->> 'deferred_count')::integer;
        pairs := pairs + (v_r ->> 'pairs')::integer;
        lag_seconds := lag_seconds || ARRAY(SELECT l::double precision FROM jsonb_array_elements_text(v_r -> 'lag_seconds') AS l);
    END LOOP;
    IF v_on_coordinator > 0 THEN
        v_failures := v_failures || format('the coordinator holds %s shards of messenger.call_sessions, which the fan-out does not reach: move them to workers (citus_drain_node)', v_on_coordinator);
    END IF;
    failures := nullif(array_to_string(v_failures, '; '), '');
END
$$;

COMMENT ON FUNCTION messenger._reap_fanout(uuid, timestamptz, jsonb, integer) IS
    'Private: one reaper cycle''s phases on a Citus coordinator: messenger._reap_local_pairs on every worker at once, their sums added up, failed workers reported. 55000 without Citus.';
REVOKE ALL ON FUNCTION messenger._reap_fanout(uuid, timestamptz, jsonb, integer) FROM PUBLIC;
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER FUNCTION messenger._reap_fanout(uuid, timestamptz, jsonb, integer)
    OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;
GRANT EXECUTE ON FUNCTION messenger._reap_fanout(uuid, timestamptz, jsonb, integer)
    TO messenger_call_reaper_operator;

COMMIT;
