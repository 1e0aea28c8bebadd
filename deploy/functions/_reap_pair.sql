-- Deploy call_timeout_reaper:functions/_reap_pair to pg

BEGIN;

-- Contract: the phases of one cycle on one relation pair, inside the caller's transaction: one
-- messenger._reap_phase per row of messenger.call_reaper_phases(), in that order, each told its
-- messenger.call_reaper_phase_run (its window is the setting the row's timeout_setting names).
-- Returns the pair's sums (calls made Missed, made Failed, skipped locked, poisoned, deferred,
-- the subtransactions spent, each closed call's lag).
--   p_calls, p_outbox  the pair: messenger.call_sessions and messenger.realtime_outbox (the
--               default pair: the phases run their static statements, plans and costs as a
--               cycle always had), or another pair of their shape, e.g. a colocated shard pair
--               on a Citus worker (the same statements through EXECUTE, a claim floor of its own)
--   p_run_id    the cycle's run id (the outbox rows' correlation_id)
--   p_as_of     the cycle's as_of
--   p_settings  to_jsonb() of messenger.call_reaper_settings with the cycle's arguments laid
--               over it (batch_size, ring_timeout, stale_timeout); it reads batch_size,
--               polling_interval, poison_backoff, poison_backoff_max and the setting each phase's
--               timeout_setting names. jsonb, not the table's row type: Citus creates a routine
--               on its workers only if every type it depends on is there, and the row type of a
--               coordinator table never is (docs/citus.md)
--   p_budget    most subtransactions the pair may open: phase 1 at most half, the last the rest
--   p_after_run the previous cycle of the caller's drain or catch-up loop, or NULL
-- Errors: 22023 (nothing read or changed) for a pair that is not of the default pair's shape:
-- both relations tables (plain or partitioned), every column the reaper reads or writes
-- present with the default table's type, the calls relation with a valid index the claims can
-- read (messenger._call_reaper_claim_indexes: a shard of ix_call_due or of the product's own
-- index of active calls) and the outbox with one of
-- ux_realtime_outbox_call_event's (the database keeps a call's pushes unique); or for a bad
-- option (messenger._check_reaper_options); or for settings missing a key it reads or holding
-- one of the wrong type (a JSON number for batch_size, a string of an interval for the others).
-- A pair the owner may not read or write fails with
-- 42501 at its first statement. Anything a phase raises is raised (the caller rolls back).
-- Locking: none of its own; the caller holds the single-runner lock (messenger._reap_cycle), and
-- every claim is FOR NO KEY UPDATE SKIP LOCKED, so a second runner on the same pair never
-- closes a call twice. Writes no ledger row and no counters: that is the cycle's (on Citus, the
-- coordinator adds up each pair's row).
-- An outbox relation whose id has no default (a Citus shard) gets ids from the default outbox's
-- sequence (messenger._reap_apply): with no such sequence it is refused (22023).
-- SECURITY DEFINER like the cycle: EXECUTE for the owner's cycle and for operators (the fan-out
-- on a worker), never for the job role or PUBLIC.
-- Citus: on a worker pg_class hides shards from the shape check unless
-- citus.override_table_visibility is off, so the routine turns it off for itself and gives the
-- caller's value back on return; where the setting does not exist (no Citus) it sets nothing.
-- Not a SET clause on the routine: without Citus loaded that is a placeholder setting, which a
-- deployer that is not a superuser may not put on a routine (42501, PostgreSQL 15-18).
-- The planner settings of every statement of a cycle on a pair are here, once, for every
-- routine it calls (each of them a SET clause of its own cost a setting's save and restore per
-- call, a few microseconds, many times a cycle); only messenger._reap_apply turns sorting back
-- on for its statement:
--   * plan_cache_mode = force_generic_plan: each statement planned once per session, not once
--     per cycle (on a partitioned call_sessions, once per partition per cycle); the generic
--     plans are the same range scans and prune partitions at executor start-up;
--   * enable_sort = off: a claim walks its index (messenger._call_reaper_claim_indexes) in key
--     order and never sorts a lane (on the product's own index of active calls, (status,
--     started_at) without call_id, the calls of one started_at come in the heap's order);
--   * jit = off: the cost a disabled sort is charged would otherwise make the executor
--     JIT-compile statements that run in microseconds.
-- tests/pgtap/cycle_settings.sql holds them to this one place.
CREATE FUNCTION messenger._reap_pair(
    p_calls     regclass,
    p_outbox    regclass,
    p_run_id    uuid,
    p_as_of     timestamptz,
    p_settings  jsonb,
    p_budget    integer,
    p_after_run uuid,
    OUT missed_count         integer,
    OUT failed_count         integer,
    OUT skipped_locked_count integer,
    OUT poisoned_count       integer,
    OUT deferred_count       integer,
    OUT subtransactions      integer,
    OUT lag_seconds          double precision[])
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET enable_sort = off
SET jit = off
AS $$
DECLARE
    v_rule     record;
    v_run      messenger.call_reaper_phase_run;
    v_res      record;
    v_problems text;
    v_batch    integer;
    v_polling  interval;
    v_backoff  interval;
    v_backoff_max interval;
    v_visibility  text := pg_catalog.current_setting('citus.override_table_visibility', true);
BEGIN
    -- Local: a routine that raises leaves it to the caller's rollback to restore.
    IF v_visibility IS NOT NULL THEN
        PERFORM pg_catalog.set_config('citus.override_table_visibility', 'off', true);
    END IF;
    IF p_calls IS DISTINCT FROM 'messenger.call_sessions'::regclass
       OR p_outbox IS DISTINCT FROM 'messenger.realtime_outbox'::regclass THEN
        -- The shape the reaper's statements need, read from the default pair (text, varchar
        -- or the service's enums alike); an index's shape as messenger._call_reaper_index_shape
        -- deparses it, without its name and table.
        WITH want (rel, ref, col) AS (
            SELECT p_calls, 'messenger.call_sessions'::regclass, c
              FROM unnest(ARRAY['call_id', 'caller_user_id', 'callee_user_id', 'media_type', 'status',
                                'end_reason', 'started_at', 'ended_at', 'updated_at', 'duration_seconds']) AS c
            UNION ALL
            SELECT p_outbox, 'messenger.realtime_outbox'::regclass, c
              FROM unnest(ARRAY['kind', 'target_kind', 'target_id', 'reference_id', 'payload',
                                'correlation_id', 'created_at']) AS c
        ), shape (rel, idx) AS (
            VALUES (p_outbox, pg_catalog.to_regclass('messenger.ux_realtime_outbox_call_event'))
        )
        SELECT pg_catalog.string_agg(x.problem, '; ')
          INTO v_problems
          FROM (SELECT format('%s is not a table', coalesce(r.rel::text, 'NULL')) AS problem
                  FROM (VALUES (p_calls), (p_outbox)) AS r (rel)
                 WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_class AS c
                                    WHERE c.oid = r.rel AND c.relkind IN ('r', 'p'))
                UNION ALL
                SELECT format('%s.%s is %s, not %s as in %s', w.rel, w.col,
                              coalesce(pg_catalog.format_type(a.atttypid, a.atttypmod), 'missing'),
                              pg_catalog.format_type(d.atttypid, d.atttypmod), w.ref)
                  FROM want AS w
                  JOIN pg_catalog.pg_attribute AS d
                    ON d.attrelid = w.ref AND d.attname = w.col AND NOT d.attisdropped
                  LEFT JOIN pg_catalog.pg_attribute AS a
                    ON a.attrelid = w.rel AND a.attname = w.col AND a.attnum > 0 AND NOT a.attisdropped
                 WHERE w.rel IS NOT NULL
                   AND (a.attnum IS NULL OR (a.atttypid, a.atttypmod) <> (d.atttypid, d.atttypmod))
                UNION ALL
                SELECT format('%s has no valid index of the shape of %s', s.rel, s.idx)
                  FROM shape AS s
                 WHERE s.rel IS NOT NULL
                   AND NOT EXISTS (
                       SELECT FROM pg_catalog.pg_index AS i, pg_catalog.pg_index AS m
                        WHERE i.indrelid = s.rel AND i.indisvalid AND m.indexrelid = s.idx
                          AND i.indisunique = m.indisunique
                          AND pg_catalog.substring(pg_catalog.pg_get_indexdef(i.indexrelid), ' (USING .*)$')
                              = pg_catalog.substring(pg_catalog.pg_get_indexdef(m.indexrelid), ' (USING .*)$'))
                UNION ALL
                SELECT format('%s has no valid index the claims can read (btree on (status, started_at), partial on status IN (''Ringing'', ''Answered'') or not partial)', p_calls)
                 WHERE p_calls IS NOT NULL
                   AND NOT EXISTS (SELECT FROM messenger._call_reaper_claim_indexes(p_calls))
                UNION ALL
                SELECT format('%s.id has no default and messenger.realtime_outbox.id no sequence to take it from', p_outbox)
                  FROM pg_catalog.pg_attribute AS a
                 WHERE a.attrelid = p_outbox AND a.attname = 'id' AND NOT a.attisdropped
                   AND a.attidentity = '' AND NOT a.atthasdef
                   AND pg_catalog.pg_get_serial_sequence('messenger.realtime_outbox', 'id') IS NULL) AS x;
        IF v_problems IS NOT NULL THEN
            RAISE EXCEPTION 'the reaper cannot run on the pair (%, %): %', p_calls, p_outbox, v_problems
                USING ERRCODE = '22023',
                      HINT = 'A pair is a calls relation and an outbox relation of the shape of messenger.call_sessions and messenger.realtime_outbox (CREATE TABLE ... (LIKE ... INCLUDING ALL), or a colocated shard pair), with the reaper''s indexes.';
        END IF;
    END IF;
    -- The settings it reads, each present and of its JSON type; the phases' windows by the
    -- names call_reaper_phases() gives them.
    SELECT pg_catalog.string_agg(format('%s is %s', k.key, coalesce(pg_catalog.jsonb_typeof(p_settings -> k.key), 'missing')), ', ')
      INTO v_problems
      FROM (SELECT 'batch_size' AS key, 'number' AS json_type
            UNION ALL
            SELECT u.key, 'string' FROM pg_catalog.unnest(ARRAY['polling_interval', 'poison_backoff', 'poison_backoff_max']) AS u (key)
            UNION ALL
            SELECT r.timeout_setting, 'string' FROM messenger.call_reaper_phases() AS r) AS k
     WHERE pg_catalog.jsonb_typeof(p_settings -> k.key) IS DISTINCT FROM k.json_type;
    IF v_problems IS NOT NULL THEN
        RAISE EXCEPTION 'the reaper''s settings for a pair need batch_size as a number and the intervals as strings: %', v_problems
            USING ERRCODE = '22023',
                  HINT = 'Pass to_jsonb() of a messenger.call_reaper_settings row.';
    END IF;
    -- A value of the right JSON type that is no integer or interval: one read-only
    -- subtransaction (no XID, so nothing against the budget) turns the cast's error into 22023.
    BEGIN
        v_batch := (p_settings ->> 'batch_size')::integer;
        v_polling := (p_settings ->> 'polling_interval')::interval;
        v_backoff := (p_settings ->> 'poison_backoff')::interval;
        v_backoff_max := (p_settings ->> 'poison_backoff_max')::interval;
        PERFORM pg_catalog.count((p_settings ->> r.timeout_setting)::interval) FROM messenger.call_reaper_phases() AS r;
    EXCEPTION WHEN data_exception THEN
        RAISE EXCEPTION 'the reaper''s settings for a pair hold a value that is not an integer or an interval: %', SQLERRM
            USING ERRCODE = '22023',
                  HINT = 'Pass to_jsonb() of a messenger.call_reaper_settings row.';
    END;
    PERFORM messenger._check_reaper_options(v_batch, (p_settings ->> 'ring_timeout')::interval,
                                            (p_settings ->> 'stale_timeout')::interval, p_as_of);
    IF p_run_id IS NULL OR p_budget IS NULL OR p_budget < 1 THEN
        RAISE EXCEPTION 'a pair''s run needs a run id and a subtransaction budget of at least 1, got % and %', p_run_id, p_budget
            USING ERRCODE = '22023';
    END IF;

    missed_count := 0;
    failed_count := 0;
    skipped_locked_count := 0;
    poisoned_count := 0;
    deferred_count := 0;
    subtransactions := 0;
    lag_seconds := '{}'::double precision[];
    -- Each phase but the last at most half of the budget left, so poison in phase 1 never
    -- starves phase 2 of attempts.
    FOR v_rule IN SELECT r.phase, r.new_status, r.timeout_setting, lead(r.phase) OVER () IS NULL AS is_last
                    FROM messenger.call_reaper_phases() AS r LOOP
        v_run := ROW(v_rule.phase, p_run_id, p_as_of,
                     (p_settings ->> v_rule.timeout_setting)::interval, v_batch,
                     v_polling, v_backoff, v_backoff_max,
                     CASE WHEN v_rule.is_last THEN p_budget - subtransactions ELSE (p_budget - subtransactions) / 2 END,
                     p_after_run, p_calls, p_outbox)::messenger.call_reaper_phase_run;
        -- An assignment, not SELECT * FROM: a simple expression is no statement of its own.
        v_res := messenger._reap_phase(v_run);
        -- Calls are counted by what they became (missed_count, failed_count).
        missed_count := missed_count + CASE v_rule.new_status WHEN 'Missed' THEN v_res.reaped ELSE 0 END;
        failed_count := failed_count + CASE v_rule.new_status WHEN 'Failed' THEN v_res.reaped ELSE 0 END;
        skipped_locked_count := skipped_locked_count + v_res.skipped_locked;
        poisoned_count := poisoned_count + v_res.poisoned;
        deferred_count := deferred_count + v_res.deferred;
        subtransactions := subtransactions + v_res.subtransactions;
        lag_seconds := lag_seconds || v_res.lag_seconds;
    END LOOP;
    IF v_visibility IS NOT NULL THEN
        PERFORM pg_catalog.set_config('citus.override_table_visibility', v_visibility, true);
    END IF;
END
$$;

COMMENT ON FUNCTION messenger._reap_pair(regclass, regclass, uuid, timestamptz, jsonb, integer, uuid) IS
    'Private: one reaper cycle''s phases on one relation pair (calls, outbox): the default pair as messenger._reap_cycle runs it, or a pair of its shape (a colocated shard pair); 22023 for a pair of another shape. No lock, ledger or counters of its own.';
REVOKE ALL ON FUNCTION messenger._reap_pair(regclass, regclass, uuid, timestamptz, jsonb, integer, uuid) FROM PUBLIC;
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER FUNCTION messenger._reap_pair(regclass, regclass, uuid, timestamptz, jsonb, integer, uuid)
    OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;
GRANT EXECUTE ON FUNCTION messenger._reap_pair(regclass, regclass, uuid, timestamptz, jsonb, integer, uuid)
    TO messenger_call_reaper_operator;

COMMIT;
