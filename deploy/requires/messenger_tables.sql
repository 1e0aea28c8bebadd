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
--   * the scheduler variable is pg_cron or none (sqitch deploy --set scheduler=none).
-- No transaction of its own: it is read-only, takes no lock a writer waits for, and
-- verify/requires/messenger_tables.sql includes it to run the same check.

SELECT pg_catalog.set_config('call_reaper.scheduler', :'scheduler', false) AS scheduler_checked \gset

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
            WHERE i.indrelid = 'messenger.call_sessions'::pg_catalog.regclass
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
