-- Deploy call_timeout_reaper:functions/_preview_local_pairs to pg

BEGIN;

-- Contract: on a Citus worker, the dry run of the fan-out's next cycle on each colocated shard
-- pair this node holds: per pair and per phase of messenger.call_reaper_phases(), the calls its
-- claims would take, in the order they take them (the retry lane, the pair's quarantined calls
-- whose backoff expired and that are still due, at most ceil(batch_size / 10) and never more
-- than 8; the fresh lane, calls that became due within the last polling interval; then the
-- backlog, oldest started first; at most batch_size in all; within one started_at the index's
-- own order, as the claims read whole started_at groups: no sort, so the plan reads that index
-- in order), other quarantined calls left out,
-- as messenger.preview_call_timeouts returns its rows (jsonb, so the coordinator reads it from
-- run_command_on_workers' text). messenger.preview_call_timeouts runs it on every worker when
-- call_sessions is distributed. Changes and locks nothing. The backlog is listed from the start
-- of the shard's range: below a pair's trusted claim floor no due call is left but quarantined
-- ones, so the cycle, starting there, takes the same calls.
--   p_as_of     the preview's as_of
--   p_settings  to_jsonb() of messenger.call_reaper_settings with the arguments laid over it
-- Errors: 55000 on a node without Citus metadata (plain PostgreSQL).
-- SECURITY DEFINER: the caller reads no call itself; EXECUTE for operators, as the preview.
CREATE FUNCTION messenger._preview_local_pairs(
    p_as_of    timestamptz,
    p_settings jsonb)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
SET enable_sort = off
AS $$
DECLARE
    v_list    jsonb;
    v_calls   regclass;
    v_rule    record;
    v_timeout interval;
    v_part    jsonb;
    v_rows    jsonb := '[]'::jsonb;
    v_batch   integer := (p_settings ->> 'batch_size')::integer;
    v_fresh   interval := (p_settings ->> 'polling_interval')::interval;
BEGIN
    IF pg_catalog.to_regclass('pg_catalog.pg_dist_local_group') IS NULL THEN
        RAISE EXCEPTION 'messenger._preview_local_pairs runs on a Citus worker: this node has no Citus metadata'
            USING ERRCODE = '55000',
                  HINT = 'On one server the preview is messenger.preview_call_timeouts().';
    END IF;
    -- The Citus catalogs exist only where Citus does: plpgsql_check parses a constant EXECUTE
    -- against the server it runs on, so not this one.
    PERFORM 'PRAGMA:disable:check';
    EXECUTE $q$
        SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.shard_name('messenger.call_sessions'::regclass, c.shardid)
                                             ORDER BY c.shardminvalue::integer), '[]'::jsonb)
          FROM pg_catalog.pg_dist_shard AS c
          JOIN pg_catalog.pg_dist_placement AS cp ON cp.shardid = c.shardid
         WHERE c.logicalrelid = 'messenger.call_sessions'::regclass
           AND cp.groupid = (SELECT g.groupid FROM pg_catalog.pg_dist_local_group AS g)$q$
       INTO v_list;
    PERFORM 'PRAGMA:enable:check';
    FOR v_calls IN SELECT e::regclass FROM pg_catalog.jsonb_array_elements_text(v_list) AS e LOOP
        FOR v_rule IN SELECT r.phase, r.status, r.new_status, r.end_reason, r.timeout_setting
                        FROM messenger.call_reaper_phases() AS r LOOP
            v_timeout := (p_settings ->> v_rule.timeout_setting)::interval;
            -- The status as a literal: the column may be the service's enum.
            EXECUTE pg_catalog.format($q$
                WITH retry AS (
                    SELECT s.call_id, s.status, s.started_at,
                           messenger.call_due_key(s.status, s.started_at, s.updated_at) AS due_key,
                           pg_catalog.format('quarantined (backoff expired at %%s): retried', e.next_attempt_at) AS why,
                           0 AS lane
                      FROM (SELECT q.call_id, q.next_attempt_at FROM messenger.call_reaper_quarantine AS q
                             WHERE q.phase = $1 AND q.next_attempt_at <= $2
                               AND EXISTS (SELECT FROM %1$s AS c WHERE c.call_id = q.call_id)
                             ORDER BY q.next_attempt_at, q.call_id
                             LIMIT least(8, ($5 + 9) / 10)) AS e
                      JOIN %1$s AS s ON s.call_id = e.call_id
                     WHERE s.status = %2$L
                       AND messenger.call_is_due(s.status, s.started_at, s.updated_at, $2 - $3)
                ), fresh AS (
                    SELECT s.call_id, s.status, s.started_at,
                           messenger.call_due_key(s.status, s.started_at, s.updated_at) AS due_key,
                           'started within the last polling interval before the cutoff' AS why,
                           1 AS lane
                      FROM %1$s AS s
                     WHERE s.status = %2$L
                       AND messenger.call_is_due(s.status, s.started_at, s.updated_at, $2 - $3)
                       AND s.started_at > $2 - $3 - $4
                       AND NOT EXISTS (SELECT FROM messenger.call_reaper_quarantine AS q WHERE q.call_id = s.call_id)
                     ORDER BY s.started_at
                     LIMIT greatest($5 - (SELECT count(*) FROM retry), 0)
                ), backlog AS (
                    SELECT s.call_id, s.status, s.started_at,
                           messenger.call_due_key(s.status, s.started_at, s.updated_at) AS due_key,
                           'backlog, oldest started first' AS why,
                           2 AS lane
                      FROM %1$s AS s
                     WHERE s.status = %2$L
                       AND messenger.call_is_due(s.status, s.started_at, s.updated_at, $2 - $3)
                       AND s.started_at <= $2 - $3 - $4
                       AND NOT EXISTS (SELECT FROM messenger.call_reaper_quarantine AS q WHERE q.call_id = s.call_id)
                     ORDER BY s.started_at
                     LIMIT greatest($5 - (SELECT count(*) FROM retry) - (SELECT count(*) FROM fresh), 0)
                ), due AS (SELECT * FROM fresh UNION ALL SELECT * FROM backlog)
                SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                           'phase', $1, 'call_id', d.call_id, 'status', d.status::text,
                           'new_status', $6, 'end_reason', $7, 'due_at', d.due_key + $3,
                           'reason', pg_catalog.format('%%s since %%s, longer than %%s %%s; %%s',
                                                       CASE %2$L WHEN 'Ringing' THEN 'Ringing' ELSE 'Answered with no progress' END,
                                                       d.due_key, $8, $3, d.why)
                                     || ' (shard ' || %3$L || ')')
                           ORDER BY d.lane, d.started_at, d.call_id), '[]'::jsonb)
                  FROM (SELECT * FROM retry UNION ALL SELECT * FROM due) AS d$q$, v_calls, v_rule.status, v_calls::text)
               INTO v_part
              USING v_rule.phase, p_as_of, v_timeout, v_fresh, v_batch, v_rule.new_status, v_rule.end_reason,
                    v_rule.timeout_setting;
            v_rows := v_rows || v_part;
        END LOOP;
    END LOOP;
    RETURN v_rows;
END
$$;

COMMENT ON FUNCTION messenger._preview_local_pairs(timestamptz, jsonb) IS
    'Private: on a Citus worker, what the fan-out''s next cycle would close on each colocated shard pair this node holds, as jsonb rows of messenger.preview_call_timeouts. 55000 without Citus.';
REVOKE ALL ON FUNCTION messenger._preview_local_pairs(timestamptz, jsonb) FROM PUBLIC;
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER FUNCTION messenger._preview_local_pairs(timestamptz, jsonb) OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;
GRANT EXECUTE ON FUNCTION messenger._preview_local_pairs(timestamptz, jsonb) TO messenger_call_reaper_operator;

COMMIT;
