-- Convert messenger.call_sessions into a table range-partitioned by started_at, one partition
-- per calendar month (UTC) plus a DEFAULT partition. See docs/partitioning.md.
--
-- Run once, by the table's owner or a superuser, after `sqitch deploy`, as ONE transaction:
--     psql -1 -v ON_ERROR_STOP=1 -f sql/partition_call_sessions.sql
-- Plain SQL without BEGIN/COMMIT so it can also run inside a caller's transaction (the
-- partitioned pgTAP test does). Running it on a table that is already partitioned changes
-- nothing.
--
-- What changes and why:
--   * The primary key becomes (call_id, started_at): PostgreSQL requires every unique
--     constraint of a partitioned table to include the partition key. call_id stays unique in
--     practice (random v4 UUIDs); see docs/partitioning.md for what the database still
--     guarantees and what the reaper relies on.
--   * Everything else is carried over as it is: columns, defaults, CHECK constraints
--     (INV-CALL invariants), column comments, the owner, table and column GRANTs, every
--     non-primary index (ix_call_active, ix_call_ringing_due, ix_call_answered_due and any
--     later one, re-created on the parent so each partition gets its own), and plain views
--     over the table. The Sqitch plan's verify and revert scripts keep working because names
--     do not change.
--   * Rows are copied under ACCESS EXCLUSIVE: the table is unavailable for the length of the
--     copy (about a minute per 10M rows on a small machine). Plan a maintenance window.
-- Refused (SQLSTATE 55000, nothing changed): triggers, foreign keys pointing at call_sessions
-- (they would need started_at), materialized views over it.
--
-- messenger.call_sessions_add_partitions(from, to) creates the monthly partitions of a range;
-- schedule it (e.g. monthly from pg_cron) so that next month's partition always exists. Rows
-- whose month has no partition land in messenger.call_sessions_default, so an insert never
-- fails; a row there is a sign the maintenance is late.

CREATE OR REPLACE FUNCTION messenger.call_sessions_add_partitions(p_from timestamptz, p_to timestamptz)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    -- Months are counted in UTC so the boundaries do not depend on the session's TimeZone.
    v_month timestamp := date_trunc('month', p_from AT TIME ZONE 'UTC');
    v_name  text;
    v_owner name;
    v_made  integer := 0;
BEGIN
    IF p_from IS NULL OR p_to IS NULL OR NOT isfinite(p_from) OR NOT isfinite(p_to)
       OR p_to < p_from OR p_to - p_from > interval '20 years' THEN
        RAISE EXCEPTION 'call_sessions_add_partitions needs finite p_from <= p_to at most 20 years apart, got % and %',
            p_from, p_to USING ERRCODE = '22023';
    END IF;
    IF (SELECT c.relkind FROM pg_catalog.pg_class AS c WHERE c.oid = 'messenger.call_sessions'::regclass) <> 'p' THEN
        RAISE EXCEPTION 'messenger.call_sessions is not partitioned'
            USING ERRCODE = '55000', HINT = 'Run sql/partition_call_sessions.sql first.';
    END IF;
    SELECT pg_catalog.pg_get_userbyid(c.relowner) INTO v_owner
      FROM pg_catalog.pg_class AS c WHERE c.oid = 'messenger.call_sessions'::regclass;
    WHILE v_month <= p_to AT TIME ZONE 'UTC' LOOP
        v_name := 'call_sessions_p' || pg_catalog.to_char(v_month, 'YYYYMM');
        IF pg_catalog.to_regclass(pg_catalog.format('messenger.%I', v_name)) IS NULL THEN
            EXECUTE pg_catalog.format(
                'CREATE TABLE messenger.%I PARTITION OF messenger.call_sessions FOR VALUES FROM (%L) TO (%L)',
                v_name, v_month AT TIME ZONE 'UTC', (v_month + interval '1 month') AT TIME ZONE 'UTC');
            EXECUTE pg_catalog.format('ALTER TABLE messenger.%I OWNER TO %I', v_name, v_owner);
            v_made := v_made + 1;
        END IF;
        v_month := v_month + interval '1 month';
    END LOOP;
    RETURN v_made;
END
$$;

COMMENT ON FUNCTION messenger.call_sessions_add_partitions(timestamptz, timestamptz) IS
    'Creates the missing monthly (UTC) partitions of messenger.call_sessions covering p_from..p_to; returns how many it made.';
REVOKE ALL ON FUNCTION messenger.call_sessions_add_partitions(timestamptz, timestamptz) FROM PUBLIC;

DO $$
DECLARE
    c_table   constant regclass := 'messenger.call_sessions'::regclass;
    v_owner   name;
    v_comment text;
    v_indexes text[];
    v_drops   text[];
    v_grants  text[];
    v_views   text[];
    v_first   timestamptz;
    v_sql     text;
BEGIN
    IF (SELECT c.relkind FROM pg_catalog.pg_class AS c WHERE c.oid = c_table) = 'p' THEN
        RAISE NOTICE 'messenger.call_sessions is already partitioned; nothing to do';
        RETURN;
    END IF;
    LOCK TABLE messenger.call_sessions IN ACCESS EXCLUSIVE MODE;

    IF EXISTS (SELECT FROM pg_catalog.pg_trigger AS t WHERE t.tgrelid = c_table AND NOT t.tgisinternal) THEN
        RAISE EXCEPTION 'messenger.call_sessions has triggers; this script does not carry them over'
            USING ERRCODE = '55000', HINT = 'Drop them, convert, and re-create them on the partitioned table.';
    END IF;
    IF EXISTS (SELECT FROM pg_catalog.pg_constraint AS k WHERE k.confrelid = c_table) THEN
        RAISE EXCEPTION 'a foreign key references messenger.call_sessions; on a partitioned table it would need started_at'
            USING ERRCODE = '55000';
    END IF;
    IF EXISTS (SELECT FROM pg_catalog.pg_depend AS d
                 JOIN pg_catalog.pg_rewrite AS r ON d.classid = 'pg_catalog.pg_rewrite'::regclass AND d.objid = r.oid
                 JOIN pg_catalog.pg_class AS v ON v.oid = r.ev_class
                WHERE d.refobjid = c_table AND v.relkind = 'm') THEN
        RAISE EXCEPTION 'a materialized view depends on messenger.call_sessions' USING ERRCODE = '55000';
    END IF;

    -- Capture everything while the definitions still name messenger.call_sessions.
    SELECT pg_catalog.pg_get_userbyid(c.relowner), pg_catalog.obj_description(c.oid, 'pg_class')
      INTO v_owner, v_comment
      FROM pg_catalog.pg_class AS c WHERE c.oid = c_table;
    SELECT coalesce(array_agg(pg_catalog.pg_get_indexdef(i.indexrelid) ORDER BY i.indexrelid), '{}'),
           coalesce(array_agg(pg_catalog.format('DROP INDEX messenger.%I', x.relname) ORDER BY i.indexrelid), '{}')
      INTO v_indexes, v_drops
      FROM pg_catalog.pg_index AS i JOIN pg_catalog.pg_class AS x ON x.oid = i.indexrelid
     WHERE i.indrelid = c_table AND NOT i.indisprimary;
    SELECT coalesce(array_agg(g.stmt), '{}') INTO v_grants
      FROM (SELECT pg_catalog.format('GRANT %s ON messenger.call_sessions TO %s', a.privilege_type,
                                     CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantee)) END)
              FROM pg_catalog.pg_class AS c, pg_catalog.aclexplode(c.relacl) AS a
             WHERE c.oid = c_table AND a.grantee <> c.relowner
            UNION ALL
            SELECT pg_catalog.format('GRANT %s (%I) ON messenger.call_sessions TO %s', a.privilege_type, t.attname,
                                     CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantee)) END)
              FROM pg_catalog.pg_attribute AS t, pg_catalog.aclexplode(t.attacl) AS a
             WHERE t.attrelid = c_table AND t.attnum > 0 AND NOT t.attisdropped) AS g (stmt);
    SELECT coalesce(array_agg(DISTINCT pg_catalog.format('CREATE OR REPLACE VIEW %s AS %s', r.ev_class::regclass,
                                                         pg_catalog.pg_get_viewdef(r.ev_class))), '{}')
      INTO v_views
      FROM pg_catalog.pg_depend AS d
      JOIN pg_catalog.pg_rewrite AS r ON d.classid = 'pg_catalog.pg_rewrite'::regclass AND d.objid = r.oid
     WHERE d.refobjid = c_table AND r.ev_class <> c_table;

    ALTER TABLE messenger.call_sessions RENAME TO call_sessions_unpartitioned;
    ALTER INDEX messenger.call_sessions_pkey RENAME TO call_sessions_unpartitioned_pkey;
    FOREACH v_sql IN ARRAY v_drops LOOP
        EXECUTE v_sql;
    END LOOP;

    CREATE TABLE messenger.call_sessions (
        LIKE messenger.call_sessions_unpartitioned
        INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING COMMENTS INCLUDING STORAGE
    ) PARTITION BY RANGE (started_at);
    ALTER TABLE messenger.call_sessions ADD CONSTRAINT call_sessions_pkey PRIMARY KEY (call_id, started_at);
    EXECUTE pg_catalog.format('ALTER TABLE messenger.call_sessions OWNER TO %I', v_owner);
    EXECUTE pg_catalog.format('COMMENT ON TABLE messenger.call_sessions IS %L', v_comment);

    CREATE TABLE messenger.call_sessions_default PARTITION OF messenger.call_sessions DEFAULT;
    EXECUTE pg_catalog.format('ALTER TABLE messenger.call_sessions_default OWNER TO %I', v_owner);
    SELECT min(u.started_at) INTO v_first FROM messenger.call_sessions_unpartitioned AS u;
    PERFORM messenger.call_sessions_add_partitions(least(coalesce(v_first, pg_catalog.now()), pg_catalog.now()),
                                                   pg_catalog.now() + interval '3 months');
    FOREACH v_sql IN ARRAY v_indexes LOOP
        EXECUTE v_sql;
    END LOOP;

    INSERT INTO messenger.call_sessions SELECT * FROM messenger.call_sessions_unpartitioned;

    FOREACH v_sql IN ARRAY v_grants || v_views LOOP
        EXECUTE v_sql;
    END LOOP;
    DROP TABLE messenger.call_sessions_unpartitioned;
    RAISE NOTICE 'messenger.call_sessions is now partitioned by month of started_at';
END
$$;

-- Autovacuum never analyzes a partitioned parent; the planner wants its statistics too.
ANALYZE messenger.call_sessions;
