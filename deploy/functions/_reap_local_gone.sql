-- Deploy call_timeout_reaper:functions/_reap_local_gone to pg

BEGIN;

-- Contract: on a Citus worker, after its pairs' cycles (messenger._reap_local_pairs): a
-- quarantine row is only ever retried by the pair holding its call. Past its backoff, the row of
-- a call in no shard of this node (moved away) or gone from its shard here (deleted by the
-- product) goes, as the default pair's retry lane drops it on one server: at most c_gone_batch a
-- cycle, each call's shard found once (get_shard_id_for_distribution_column), then at most one
-- probe by key. Returns how many rows went (event=quarantine_dropped). A shard moved off this
-- node meanwhile (its relation dropped) makes it drop none this time (logged,
-- event=quarantine_drop_skipped): the next cycle drops them. The caller commits.
--   p_run_id, p_as_of  the coordinator's cycle's
--   p_pairs    the node's shard pairs, as _reap_local_pairs lists them (calls_shard, calls)
-- SECURITY INVOKER, as _reap_local_pairs, which runs as the owner (or an operator by hand).
CREATE FUNCTION messenger._reap_local_gone(
    p_run_id uuid,
    p_as_of  timestamptz,
    p_pairs  jsonb)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
-- Its DELETE is dynamic SQL, which plpgsql_check cannot see:
-- @plpgsql_check_options: performance_warnings = false
DECLARE
    c_gone_batch constant integer := 1000;
    v_terms   text;
    v_gone    bigint := 0::bigint;
    v_state   text;
    v_message text;
BEGIN
    -- get_shard_id_for_distribution_column exists only where Citus does.
    PERFORM 'PRAGMA:disable:check';
    SELECT string_agg(format(' OR (x.shard = %s AND NOT EXISTS (SELECT FROM %s AS c WHERE c.call_id = x.call_id))',
                             (e ->> 'calls_shard')::bigint, (e ->> 'calls')::regclass), '')
      INTO v_terms
      FROM jsonb_array_elements(p_pairs) AS e;
    BEGIN
        EXECUTE format($q$
            WITH expired AS MATERIALIZED (
                SELECT q.call_id,
                       pg_catalog.get_shard_id_for_distribution_column('messenger.call_sessions', q.call_id) AS shard
                  FROM messenger.call_reaper_quarantine AS q
                 WHERE q.next_attempt_at <= $1
                 ORDER BY q.next_attempt_at
                 LIMIT $2)
            DELETE FROM messenger.call_reaper_quarantine AS q
             USING expired AS x
             WHERE q.call_id = x.call_id
               AND (x.shard <> ALL ($3)%s)$q$, coalesce(v_terms, ''))
          USING p_as_of, c_gone_batch,
                ARRAY(SELECT (e ->> 'calls_shard')::bigint FROM jsonb_array_elements(p_pairs) AS e);
        GET DIAGNOSTICS v_gone = ROW_COUNT;
        IF v_gone > 0 THEN
            RAISE LOG 'call_reaper event=quarantine_dropped run_id=% count=% reason=call_not_on_this_node', p_run_id, v_gone;
        END IF;
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT;
        RAISE LOG 'call_reaper event=quarantine_drop_skipped run_id=% sqlstate=% message=%', p_run_id, v_state, to_json(v_message);
    END;
    RETURN v_gone;
END
$$;

COMMENT ON FUNCTION messenger._reap_local_gone(uuid, timestamptz, jsonb) IS
    'Private: on a Citus worker, deletes the expired quarantine rows of calls this node no longer holds (moved away or deleted), at most 1000 a cycle; returns how many.';
REVOKE ALL ON FUNCTION messenger._reap_local_gone(uuid, timestamptz, jsonb) FROM PUBLIC;
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER FUNCTION messenger._reap_local_gone(uuid, timestamptz, jsonb) OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;
GRANT EXECUTE ON FUNCTION messenger._reap_local_gone(uuid, timestamptz, jsonb) TO messenger_call_reaper_operator;

COMMIT;
