-- Deploy call_timeout_reaper:functions/_reap_pair_check to pg

BEGIN;

-- Contract: before messenger._reap_pair runs a cycle on a relation pair, refuses what it cannot
-- run on, reading nothing of the pair's rows and changing nothing, and returns the settings the
-- phases read (batch size, polling interval, poison backoffs) as their types.
-- Errors: 22023 for
--   * a pair that is not the default one and not of its shape: both relations tables (plain or
--     partitioned), every column the reaper reads or writes present with the default table's
--     type (so the %TYPE values bind as they do there), the calls relation with a valid index
--     the claims can read (messenger._call_reaper_claim_indexes: a shard of ix_call_due or of
--     the product's own index of active calls), the outbox with one of
--     ux_realtime_outbox_call_event's (the database keeps a call's pushes unique), and an
--     outbox id with a default or messenger.realtime_outbox.id a sequence to take it from;
--   * settings (to_jsonb() of messenger.call_reaper_settings with the cycle's arguments laid
--     over it) missing a key the phases read or holding one of the wrong JSON type (a number for
--     batch_size, a string of an interval for the others), or a value that is no integer or
--     interval; a bad option (messenger._check_reaper_options); no run id, or a budget below 1.
-- Every problem of the pair is named in one message. The default pair is not looked up.
CREATE FUNCTION messenger._reap_pair_check(
    p_calls     regclass,
    p_outbox    regclass,
    p_run_id    uuid,
    p_as_of     timestamptz,
    p_settings  jsonb,
    p_budget    integer,
    OUT batch        integer,
    OUT polling      interval,
    OUT backoff      interval,
    OUT backoff_max  interval)
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_problems text;
BEGIN
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
        batch := (p_settings ->> 'batch_size')::integer;
        polling := (p_settings ->> 'polling_interval')::interval;
        backoff := (p_settings ->> 'poison_backoff')::interval;
        backoff_max := (p_settings ->> 'poison_backoff_max')::interval;
        PERFORM pg_catalog.count((p_settings ->> r.timeout_setting)::interval) FROM messenger.call_reaper_phases() AS r;
    EXCEPTION WHEN data_exception THEN
        RAISE EXCEPTION 'the reaper''s settings for a pair hold a value that is not an integer or an interval: %', SQLERRM
            USING ERRCODE = '22023',
                  HINT = 'Pass to_jsonb() of a messenger.call_reaper_settings row.';
    END;
    PERFORM messenger._check_reaper_options(batch, (p_settings ->> 'ring_timeout')::interval,
                                            (p_settings ->> 'stale_timeout')::interval, p_as_of);
    IF p_run_id IS NULL OR p_budget IS NULL OR p_budget < 1 THEN
        RAISE EXCEPTION 'a pair''s run needs a run id and a subtransaction budget of at least 1, got % and %', p_run_id, p_budget
            USING ERRCODE = '22023';
    END IF;
END
$$;

COMMENT ON FUNCTION messenger._reap_pair_check(regclass, regclass, uuid, timestamptz, jsonb, integer) IS
    'Private: refuses (22023) a relation pair not of the default pair''s shape or settings a pair''s cycle cannot read; returns the settings the phases read.';
REVOKE ALL ON FUNCTION messenger._reap_pair_check(regclass, regclass, uuid, timestamptz, jsonb, integer) FROM PUBLIC;
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER FUNCTION messenger._reap_pair_check(regclass, regclass, uuid, timestamptz, jsonb, integer)
    OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;

COMMIT;
