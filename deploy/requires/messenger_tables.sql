-- Deploy call_timeout_reaper:requires/messenger_tables to pg
-- The reaper installs beside two tables that belong to the messenger service and never creates,
-- owns or drops them. Before any other change, this checks what the reaper relies on and
-- refuses, changing nothing, with SQLSTATE 55000 and one DETAIL line per mismatch:
--   * schema messenger and both tables exist (plain or partitioned);
--   * the columns of the reaper's contract, with their types. Status-like columns may be text,
--     varchar or the product's own enum types (then holding the labels the reaper reads and
--     writes); ids uuid, times timestamptz, payload jsonb;
--   * a unique key on call_sessions.call_id (alone, or with started_at on a table partitioned by
--     it), so a closure touches one call;
--   * no NOT NULL column of realtime_outbox that the reaper's INSERT leaves to a default
--     without having one, and no generated column among those the reaper writes;
--   * the scheduler variable is pg_cron or none (sqitch deploy --set scheduler=none), and
--     scheduler=none (no pg_cron jobs) is not combined with cron_database=NAME (the
--     cross-database mode, which schedules them in NAME): 22023 for either.
-- Then, the check passed, it records in messenger.call_reaper_found (the deploying role's table,
-- no grant to anyone) what the later scripts overwrite on objects that are not the
-- reaper's: for each of the reaper's four role names, whether the role exists, its ACL entries on
-- schemas messenger and cron, call_sessions, realtime_outbox, their columns and sequences, and
-- its settings (for every database and for this one). The reverts give those back
-- (README, "Deploy into an existing database").
-- No transaction of its own: the check is read-only and takes no lock a writer waits for, the
-- snapshot is one statement, and verify/requires/messenger_tables.sql includes this file to run
-- the same check (call_reaper_check_only: without the snapshot).

SELECT pg_catalog.set_config('call_reaper.scheduler', :'scheduler', false) AS scheduler_checked,
       pg_catalog.set_config('call_reaper.cron_database', :'cron_database', false) AS cron_database_checked \gset

DO $$
DECLARE
    v_problems text[] := '{}';
    r          record;
BEGIN
    IF current_setting('call_reaper.scheduler') NOT IN ('pg_cron', 'none') THEN
        RAISE EXCEPTION 'scheduler must be pg_cron or none, got %', current_setting('call_reaper.scheduler')
            USING ERRCODE = '22023',
                  HINT = 'sqitch deploy --set scheduler=none installs everything but the pg_cron jobs.';
    END IF;
    IF current_setting('call_reaper.scheduler') = 'none' AND current_setting('call_reaper.cron_database') <> 'none' THEN
        RAISE EXCEPTION 'scheduler=none schedules no job, cron_database=% schedules them in %: choose one', current_setting('call_reaper.cron_database'), current_setting('call_reaper.cron_database')
            USING ERRCODE = '22023',
                  HINT = pg_catalog.format('The cross-database mode is sqitch deploy --set cron_database=%s alone; sqitch deploy --set scheduler=none alone installs no pg_cron job.', current_setting('call_reaper.cron_database'));
    END IF;

    IF pg_catalog.to_regnamespace('messenger') IS NULL THEN
        v_problems := v_problems || 'schema messenger does not exist'::text;
    END IF;
    FOR r IN SELECT t.name FROM (VALUES ('call_sessions'), ('realtime_outbox')) AS t (name)
              WHERE pg_catalog.to_regclass('messenger.' || t.name) IS NULL
    LOOP
        v_problems := v_problems || pg_catalog.format('table messenger.%s does not exist', r.name);
    END LOOP;

    -- kind: 'labels' = text, varchar or an enum holding every label in labels;
    -- 'text' = text or varchar; otherwise the exact type (domains count as their base type).
    FOR r IN
        WITH want (tbl, col, kind, labels, writes) AS (VALUES
            ('call_sessions',   'call_id',          'uuid',        NULL, false),
            ('call_sessions',   'caller_user_id',   'uuid',        NULL, false),
            ('call_sessions',   'callee_user_id',   'uuid',        NULL, false),
            ('call_sessions',   'media_type',       'labels',      '{}'::text[], false),
            ('call_sessions',   'status',           'labels',      '{Ringing,Answered,Missed,Failed}', true),
            ('call_sessions',   'end_reason',       'labels',      '{Timeout,Error}', true),
            ('call_sessions',   'started_at',       'timestamptz', NULL, false),
            ('call_sessions',   'answered_at',      'timestamptz', NULL, false),
            ('call_sessions',   'ended_at',         'timestamptz', NULL, true),
            ('call_sessions',   'updated_at',       'timestamptz', NULL, true),
            ('call_sessions',   'duration_seconds', 'integer',     NULL, true),
            ('realtime_outbox', 'kind',             'labels',      '{CallMissed,CallEnded}', true),
            ('realtime_outbox', 'target_kind',      'labels',      '{User}', true),
            ('realtime_outbox', 'target_id',        'text',        NULL, true),
            ('realtime_outbox', 'reference_id',     'uuid',        NULL, true),
            ('realtime_outbox', 'payload',          'jsonb',       NULL, true),
            ('realtime_outbox', 'correlation_id',   'uuid',        NULL, true),
            ('realtime_outbox', 'created_at',       'timestamptz', NULL, true),
            ('realtime_outbox', 'dispatched_at',    'timestamptz', NULL, false))
        SELECT w.*, a.attname IS NOT NULL AS present, a.attnotnull, a.attgenerated,
               pg_catalog.format_type(a.atttypid, a.atttypmod) AS declared,
               b.typname AS base, b.typtype,
               ARRAY(SELECT e.enumlabel::text FROM pg_catalog.pg_enum AS e WHERE e.enumtypid = b.oid) AS enum_labels
          FROM want AS w
          JOIN pg_catalog.pg_class AS c
            ON c.oid = pg_catalog.to_regclass('messenger.' || w.tbl)
          LEFT JOIN pg_catalog.pg_attribute AS a
            ON a.attrelid = c.oid AND a.attname = w.col AND a.attnum > 0 AND NOT a.attisdropped
          LEFT JOIN pg_catalog.pg_type AS t ON t.oid = a.atttypid
          LEFT JOIN pg_catalog.pg_type AS b
            ON b.oid = CASE t.typtype WHEN 'd' THEN t.typbasetype ELSE t.oid END
    LOOP
        IF NOT r.present THEN
            v_problems := v_problems || pg_catalog.format('messenger.%s.%s does not exist', r.tbl, r.col);
            CONTINUE;
        END IF;
        IF (CASE r.kind
                WHEN 'labels' THEN NOT (r.base IN ('text', 'varchar')
                                        OR (r.typtype = 'e' AND r.enum_labels @> r.labels))
                WHEN 'text' THEN r.base NOT IN ('text', 'varchar')
                ELSE r.base <> CASE r.kind WHEN 'integer' THEN 'int4' ELSE r.kind END
            END) THEN
            v_problems := v_problems || pg_catalog.format('messenger.%s.%s is %s, the reaper needs %s',
                r.tbl, r.col, r.declared,
                CASE r.kind
                    WHEN 'labels' THEN 'text, varchar or an enum with the labels '
                                       || pg_catalog.array_to_string(r.labels, ', ')
                    WHEN 'text' THEN 'text or varchar'
                    ELSE r.kind END);
        END IF;
        IF r.writes AND r.attgenerated <> '' THEN
            v_problems := v_problems || pg_catalog.format('messenger.%s.%s is a generated column: the reaper writes it',
                                                          r.tbl, r.col);
        END IF;
        IF r.col = 'duration_seconds' AND r.attnotnull THEN
            v_problems := v_problems || 'messenger.call_sessions.duration_seconds is NOT NULL: a failed call has none'::text;
        END IF;
    END LOOP;

    -- Columns of the product's own that the reaper's INSERT cannot fill.
    FOR r IN
        SELECT a.attname
          FROM pg_catalog.pg_attribute AS a
         WHERE a.attrelid = pg_catalog.to_regclass('messenger.realtime_outbox')
           AND a.attnum > 0 AND NOT a.attisdropped AND a.attnotnull
           AND NOT a.atthasdef AND a.attidentity = '' AND a.attgenerated = ''
           AND a.attname NOT IN ('kind', 'target_kind', 'target_id', 'reference_id', 'payload',
                                 'correlation_id', 'created_at')
    LOOP
        v_problems := v_problems || pg_catalog.format(
            'messenger.realtime_outbox.%s is NOT NULL without a default: the reaper''s INSERT does not set it', r.attname);
    END LOOP;

    IF pg_catalog.to_regclass('messenger.call_sessions') IS NOT NULL
       AND NOT EXISTS (
           SELECT FROM pg_catalog.pg_index AS i
            -- to_regclass, not a ::regclass cast: a constant cast is folded when the query is
            -- planned, and without schema messenger it raised 3F000 before the list below.
            WHERE i.indrelid = pg_catalog.to_regclass('messenger.call_sessions')
              AND i.indisunique AND i.indpred IS NULL AND i.indexprs IS NULL
              AND (SELECT pg_catalog.array_agg(a.attname::text ORDER BY a.attname)
                     FROM pg_catalog.pg_attribute AS a
                    WHERE a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey))
                  IN ('{call_id}', '{call_id,started_at}')) THEN
        v_problems := v_problems ||
            'messenger.call_sessions has no unique key on call_id (or on call_id, started_at)'::text;
    END IF;

    IF pg_catalog.cardinality(v_problems) > 0 THEN
        RAISE EXCEPTION 'messenger''s tables do not meet what the reaper relies on (% mismatches); nothing was changed',
            pg_catalog.cardinality(v_problems)
            USING ERRCODE = '55000',
                  DETAIL = pg_catalog.array_to_string(v_problems, E'\n'),
                  HINT = 'The reaper installs beside the messenger service''s own tables: see README, "Deploy into an existing database".';
    END IF;
END
$$;

-- What the later scripts overwrite on objects that are not the reaper's, found before
-- any of them runs (verify/requires/messenger_tables.sql sets call_reaper_check_only and stops
-- at the check above). One statement, so it is taken whole or not at all.
\if :{?call_reaper_check_only}
\else
DO $$
DECLARE
    r record;
BEGIN
    IF pg_catalog.to_regclass('messenger.call_reaper_found') IS NOT NULL THEN
        RAISE EXCEPTION 'messenger.call_reaper_found is left from an earlier deploy; nothing was changed'
            USING ERRCODE = '55000',
                  DETAIL = 'It lists what the reaper''s role names held before that deploy, and only its revert removes it.',
                  HINT = 'Check it against the roles and grants as they are now, then DROP TABLE messenger.call_reaper_found and deploy again.';
    END IF;
    CREATE TABLE messenger.call_reaper_found (
        role        name NOT NULL CHECK (role IN ('messenger_call_reaper', 'messenger_call_reaper_owner',
                                                  'messenger_call_reaper_monitor', 'messenger_call_reaper_operator')),
        kind        text NOT NULL CHECK (kind IN ('role', 'grant', 'setting')),
        -- grant: SCHEMA, TABLE or SEQUENCE; setting: '' (every database) or DATABASE
        object_type text NOT NULL DEFAULT '' CHECK (object_type IN ('', 'SCHEMA', 'TABLE', 'SEQUENCE', 'DATABASE')),
        object_name text NOT NULL DEFAULT '',   -- the schema, the relation (regclass) or the database
        column_name text NOT NULL DEFAULT '',   -- a column's grant: its column
        item        text NOT NULL DEFAULT '',   -- grant: the privilege; setting: its name
        grantor     text NOT NULL DEFAULT '',   -- grant: the role that granted it
        grantable   boolean,                    -- grant: held WITH GRANT OPTION
        value       text,                       -- setting: its value, NULL where the role had none
        PRIMARY KEY (role, kind, object_type, object_name, column_name, item, grantor)
    );
    COMMENT ON TABLE messenger.call_reaper_found IS
        'The reaper''s role names as found before its first deploy here (existence, grants on the product''s schemas and tables, role settings): the reverts give these back.';
    -- Owner only, whatever default privileges the schema has: a row here is given back by the
    -- revert, so no role the deploy creates or the product's may write one.
    FOR r IN SELECT DISTINCT x.grantee
               FROM pg_catalog.pg_class AS c CROSS JOIN LATERAL pg_catalog.aclexplode(c.relacl) AS x
              WHERE c.oid = 'messenger.call_reaper_found'::pg_catalog.regclass AND x.grantee <> c.relowner
    LOOP
        EXECUTE pg_catalog.format('REVOKE ALL ON messenger.call_reaper_found FROM %s',
            CASE r.grantee WHEN 0 THEN 'PUBLIC' ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(r.grantee)) END);
    END LOOP;

    INSERT INTO messenger.call_reaper_found (role, kind)
    SELECT a.rolname, 'role'
      FROM pg_catalog.pg_roles AS a
     WHERE a.rolname IN ('messenger_call_reaper', 'messenger_call_reaper_owner',
                         'messenger_call_reaper_monitor', 'messenger_call_reaper_operator');

    -- Their ACL entries on schemas messenger and cron, the two tables, their columns and the
    -- sequences the tables own (serial or identity).
    WITH tables AS (
        SELECT c.oid FROM pg_catalog.pg_class AS c
         WHERE c.oid IN (pg_catalog.to_regclass('messenger.call_sessions'), pg_catalog.to_regclass('messenger.realtime_outbox'))
    ), acls (object_type, object_name, column_name, acl) AS (
        SELECT 'SCHEMA', n.nspname::text, '', n.nspacl
          FROM pg_catalog.pg_namespace AS n WHERE n.nspname IN ('messenger', 'cron')
        UNION ALL
        SELECT 'TABLE', 'messenger.' || pg_catalog.quote_ident(c.relname), '', c.relacl
          FROM pg_catalog.pg_class AS c WHERE c.oid IN (SELECT t.oid FROM tables AS t)
        UNION ALL
        SELECT 'TABLE', 'messenger.' || pg_catalog.quote_ident(c.relname), a.attname::text, a.attacl
          FROM pg_catalog.pg_attribute AS a JOIN pg_catalog.pg_class AS c ON c.oid = a.attrelid
         WHERE a.attrelid IN (SELECT t.oid FROM tables AS t) AND a.attnum > 0 AND NOT a.attisdropped
        UNION ALL
        SELECT 'SEQUENCE', pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(s.relname), '', s.relacl
          FROM pg_catalog.pg_class AS s
          JOIN pg_catalog.pg_namespace AS n ON n.oid = s.relnamespace
          JOIN pg_catalog.pg_depend AS d
            ON d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objid = s.oid
           AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.deptype IN ('a', 'i')
         WHERE s.relkind = 'S' AND d.refobjid IN (SELECT t.oid FROM tables AS t)
    )
    INSERT INTO messenger.call_reaper_found (role, kind, object_type, object_name, column_name, item, grantor, grantable)
    SELECT a.rolname, 'grant', o.object_type, o.object_name, o.column_name, x.privilege_type,
           pg_catalog.pg_get_userbyid(x.grantor), x.is_grantable
      FROM acls AS o
     CROSS JOIN LATERAL pg_catalog.aclexplode(o.acl) AS x
      JOIN pg_catalog.pg_roles AS a ON a.oid = x.grantee
     WHERE a.rolname IN ('messenger_call_reaper', 'messenger_call_reaper_owner',
                         'messenger_call_reaper_monitor', 'messenger_call_reaper_operator');

    -- Their settings for every database and for this one: each one they had, and the timeouts
    -- the deploy sets (NULL where the role had none, so the revert resets it).
    WITH levels (setdatabase, object_type, object_name) AS (
        VALUES (0::pg_catalog.oid, '', ''),
               ((SELECT d.oid FROM pg_catalog.pg_database AS d WHERE d.datname = pg_catalog.current_database()),
                'DATABASE', pg_catalog.current_database()::text)
    ), found AS (
        SELECT s.setrole, s.setdatabase, pg_catalog.split_part(e.entry, '=', 1) AS item,
               pg_catalog.substr(e.entry, pg_catalog.strpos(e.entry, '=') + 1) AS value
          FROM pg_catalog.pg_db_role_setting AS s CROSS JOIN LATERAL pg_catalog.unnest(s.setconfig) AS e (entry)
    ), items AS (
        SELECT f.setrole, f.setdatabase, f.item FROM found AS f
        UNION
        SELECT a.oid, l.setdatabase, t.item
          FROM pg_catalog.pg_roles AS a CROSS JOIN levels AS l
         CROSS JOIN pg_catalog.unnest(CASE WHEN pg_catalog.current_setting('server_version_num')::integer >= 170000
                                           THEN '{statement_timeout,idle_in_transaction_session_timeout,transaction_timeout}'::text[]
                                           ELSE '{statement_timeout,idle_in_transaction_session_timeout}'::text[] END) AS t (item)
    )
    INSERT INTO messenger.call_reaper_found (role, kind, object_type, object_name, item, value)
    SELECT a.rolname, 'setting', l.object_type, l.object_name, i.item, f.value
      FROM items AS i
      JOIN levels AS l ON l.setdatabase = i.setdatabase
      JOIN pg_catalog.pg_roles AS a ON a.oid = i.setrole
      LEFT JOIN found AS f ON (f.setrole, f.setdatabase, f.item) = (i.setrole, i.setdatabase, i.item)
     WHERE a.rolname IN ('messenger_call_reaper', 'messenger_call_reaper_owner',
                         'messenger_call_reaper_monitor', 'messenger_call_reaper_operator');
END
$$;
\endif
