-- Hand messenger.call_sessions to pg_partman: range-partitioned by started_at, one partition
-- per calendar month, a DEFAULT partition, partitions kept ahead and old months archived by
-- pg_partman's maintenance. See docs/partitioning.md.
--
-- Step 1 of 2. Run once, as a superuser, after `sqitch deploy`, in the database named by
-- cron.database_name, as ONE transaction:
--     psql -1 -v ON_ERROR_STOP=1 -f sql/partition_call_sessions.sql
-- then move the history with step 2, sql/partition_call_sessions_move.sql.
-- Plain SQL without BEGIN/COMMIT so it can also run inside a caller's transaction (the
-- partitioned pgTAP test does). On a table that is already partitioned it changes nothing.
--
-- psql variables (-v name=value):
--   retention    months older than this are detached by maintenance and moved to schema
--                messenger_archive (kept, not dropped); default '12 months'
--   premake      months created ahead of the current one; default 3
--
-- What it does, under ACCESS EXCLUSIVE for a time proportional to the ACTIVE calls only:
--   * renames the old table to messenger.call_sessions_unpartitioned and creates
--     messenger.call_sessions PARTITION BY RANGE (started_at) with the same columns,
--     defaults, CHECK constraints (INV-CALL invariants), comments, owner, table and column
--     GRANTs, every non-primary index (re-created on the parent so each partition gets its
--     own) and plain views over the table. Names do not change, so the Sqitch plan's verify
--     and revert scripts keep working.
--   * primary key (call_id, started_at): PostgreSQL requires every unique constraint of a
--     partitioned table to include the partition key (docs/partitioning.md, "Uniqueness").
--   * pg_partman's create_parent makes the monthly partitions from the oldest active call's
--     month to `premake` months ahead, plus messenger.call_sessions_default.
--   * moves the active (Ringing, Answered) calls into the new table, so everything the
--     reaper and the application update is in place when this transaction commits; the
--     terminal history stays in call_sessions_unpartitioned for step 2 to move in batches
--     (without history, the emptied old table is dropped here and step 2 has nothing to do).
--   * sets pg_partman's retention and schedules its maintenance from pg_cron (job
--     messenger-call-sessions-partman, daily, run as the table's owner: creating and
--     detaching partitions needs ownership, which the reaper's job role never has).
-- Refused (SQLSTATE 55000, nothing changed): triggers, foreign keys pointing at call_sessions
-- (they would need started_at), materialized views over it, pg_cron not loaded here.

\if :{?retention}
\else
\set retention '12 months'
\endif
\if :{?premake}
\else
\set premake 3
\endif
-- A DO block cannot see psql variables; a setting carries premake into it.
SET call_sessions_partman.premake TO :'premake';

-- pg_partman computes month boundaries in the session's TimeZone; months are UTC months.
SET LOCAL TimeZone = 'UTC';

CREATE SCHEMA IF NOT EXISTS partman;
CREATE EXTENSION IF NOT EXISTS pg_partman SCHEMA partman;
-- Archived months live outside schema messenger, so `sqitch revert` neither trips over them
-- nor destroys them.
CREATE SCHEMA IF NOT EXISTS messenger_archive;

DO $$
DECLARE
    c_table   constant regclass := 'messenger.call_sessions'::regclass;
    v_owner   name;
    v_comment text;
    v_indexes text[];
    v_drops   text[];
    v_grants  text[];
    v_views   text[];
    v_start   timestamptz;
    v_moved   bigint;
    v_sql     text;
BEGIN
    IF (SELECT c.relkind FROM pg_catalog.pg_class AS c WHERE c.oid = c_table) = 'p' THEN
        RAISE NOTICE 'messenger.call_sessions is already partitioned; nothing to do';
        RETURN;
    END IF;
    IF current_setting('cron.database_name', true) IS DISTINCT FROM current_database() THEN
        RAISE EXCEPTION 'pg_cron must run in this database to schedule pg_partman''s maintenance'
            USING ERRCODE = '55000', HINT = 'Run this script in the database named by cron.database_name.';
    END IF;
    -- The nightly maintenance runs in the server's default TimeZone: anything but UTC would
    -- shift the month boundaries of the partitions it adds.
    IF (SELECT s.reset_val NOT IN ('UTC', 'Etc/UTC', 'GMT', 'Etc/GMT', 'UCT', 'Etc/UCT')
          FROM pg_catalog.pg_settings AS s WHERE s.name = 'TimeZone') THEN
        RAISE WARNING 'the default TimeZone is %, not UTC: pg_partman''s maintenance would cut months there',
            (SELECT s.reset_val FROM pg_catalog.pg_settings AS s WHERE s.name = 'TimeZone')
            USING HINT = 'Set timezone = ''UTC'' in postgresql.conf, or ALTER ROLE <owner> IN DATABASE <db> SET timezone = ''UTC''.';
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
    -- Each index with its comment: the reaper's indexes carry the mark its revert looks for.
    SELECT coalesce(array_agg(pg_catalog.pg_get_indexdef(i.indexrelid)
                              || coalesce(pg_catalog.format('; COMMENT ON INDEX messenger.%I IS %L', x.relname,
                                                            pg_catalog.obj_description(i.indexrelid, 'pg_class')), '')
                              ORDER BY i.indexrelid), '{}'),
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

    -- The old table keeps only its primary key: step 2 finds its rows by started_at through an
    -- index it builds once nobody writes here any more, and every other index would only slow
    -- the batches' DELETEs down.
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
    FOREACH v_sql IN ARRAY v_indexes LOOP
        EXECUTE v_sql;
    END LOOP;

    -- Partitions must exist for every active call's month before those calls move in: a month's
    -- partition cannot be created later while the DEFAULT partition holds rows of that month.
    SELECT min(u.started_at) INTO v_start
      FROM messenger.call_sessions_unpartitioned AS u WHERE u.status IN ('Ringing', 'Answered');
    PERFORM partman.create_parent(
        p_parent_table      => 'messenger.call_sessions',
        p_control           => 'started_at',
        p_type              => 'native',
        p_interval          => 'monthly',
        p_premake           => current_setting('call_sessions_partman.premake')::integer,
        p_start_partition   => least(coalesce(v_start, pg_catalog.now()), pg_catalog.now())::text,
        p_jobmon            => false);
    -- create_parent made them as the current user; maintenance later runs as the owner.
    FOR v_sql IN
        SELECT pg_catalog.format('ALTER TABLE %s OWNER TO %I', i.inhrelid::regclass, v_owner)
          FROM pg_catalog.pg_inherits AS i WHERE i.inhparent = 'messenger.call_sessions'::regclass
    LOOP
        EXECUTE v_sql;
    END LOOP;
    -- A non-superuser owner needs pg_partman's tables and the archive schema for maintenance.
    IF NOT (SELECT r.rolsuper FROM pg_catalog.pg_roles AS r WHERE r.rolname = v_owner) THEN
        EXECUTE pg_catalog.format('GRANT USAGE ON SCHEMA partman TO %I', v_owner);
        EXECUTE pg_catalog.format('GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA partman TO %I', v_owner);
        EXECUTE pg_catalog.format('GRANT USAGE, CREATE ON SCHEMA messenger_archive TO %I', v_owner);
    END IF;

    WITH active AS (
        DELETE FROM messenger.call_sessions_unpartitioned AS u
         WHERE u.status IN ('Ringing', 'Answered')
        RETURNING u.*)
    INSERT INTO messenger.call_sessions SELECT * FROM active;
    GET DIAGNOSTICS v_moved = ROW_COUNT;

    FOREACH v_sql IN ARRAY v_grants || v_views LOOP
        EXECUTE v_sql;
    END LOOP;
    IF NOT EXISTS (SELECT FROM messenger.call_sessions_unpartitioned) THEN
        DROP TABLE messenger.call_sessions_unpartitioned;
        RAISE NOTICE 'messenger.call_sessions is now partitioned by month of started_at (pg_partman); % active call(s) moved, no history to move',
            v_moved;
    ELSE
        RAISE NOTICE 'messenger.call_sessions is now partitioned by month of started_at (pg_partman); % active call(s) moved, history left in messenger.call_sessions_unpartitioned for sql/partition_call_sessions_move.sql',
            v_moved;
    END IF;
END
$$;

-- Old months are detached and moved to messenger_archive, never dropped: archiving is
-- reversible, and the reaper never reads terminal calls.
UPDATE partman.part_config
   SET retention = :'retention',
       retention_keep_table = true,
       retention_schema = 'messenger_archive',
       infinite_time_partitions = true
 WHERE parent_table = 'messenger.call_sessions';

-- As the table's owner, never messenger_call_reaper: creating, detaching and moving
-- partitions needs ownership of the table, and the reaper's job role must stay able to execute
-- the reaper and nothing more. schedule_in_database exists from pg_cron 1.4 on; a job of the
-- same name and user is updated, so running this again is harmless.
SELECT cron.schedule_in_database('messenger-call-sessions-partman', '7 3 * * *',
                                 'CALL partman.run_maintenance_proc(p_jobmon => false)',
                                 current_database(), pg_catalog.pg_get_userbyid(c.relowner)) AS partman_jobid
  FROM pg_catalog.pg_class AS c
 WHERE c.oid = 'messenger.call_sessions'::regclass
\gset

-- Autovacuum never analyzes a partitioned parent; the planner wants its statistics too.
ANALYZE messenger.call_sessions;
