-- The exporter's role reaches the reaper's numbers through messenger.call_reaper_metrics() and
-- through nothing else: no call, outbox or state table, no other function.
BEGIN;
SELECT plan(9);

SELECT has_function('messenger', 'call_reaper_metrics', ARRAY[]::text[],
    'messenger.call_reaper_metrics() exists');
SELECT is_definer('messenger', 'call_reaper_metrics', ARRAY[]::text[],
    'call_reaper_metrics is SECURITY DEFINER, so the monitor role needs no table privilege');
SELECT function_owner_is('messenger', 'call_reaper_metrics', ARRAY[]::text[],
    'messenger_call_reaper_owner',
    'call_reaper_metrics runs as the reaper''s owner, never as the deployer');
SELECT ok((SELECT p.proconfig @> ARRAY['search_path=pg_catalog, pg_temp']
             FROM pg_catalog.pg_proc AS p WHERE p.oid = 'messenger.call_reaper_metrics()'::regprocedure),
    'call_reaper_metrics pins its search_path');
SELECT function_privs_are('messenger', 'call_reaper_metrics', ARRAY[]::text[],
    'messenger_call_reaper_monitor', ARRAY['EXECUTE'],
    'the monitor role may execute call_reaper_metrics');
SELECT ok(NOT has_function_privilege('public', 'messenger.call_reaper_metrics()', 'EXECUTE')
          AND NOT has_function_privilege('messenger_call_reaper', 'messenger.call_reaper_metrics()', 'EXECUTE'),
    'neither PUBLIC nor the job role may execute call_reaper_metrics');

-- Checked over every relation and function of the schema, so one added later with a careless
-- grant (or PUBLIC's default EXECUTE) fails here.
SELECT is_empty($$
    SELECT c.oid::regclass
      FROM pg_catalog.pg_class AS c
     WHERE c.relnamespace = 'messenger'::regnamespace
       AND (pg_catalog.has_table_privilege('messenger_call_reaper_monitor', c.oid,
                'SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')
            OR (c.relkind IN ('r', 'v', 'm', 'f', 'p')
                AND pg_catalog.has_any_column_privilege('messenger_call_reaper_monitor', c.oid,
                        'SELECT, INSERT, UPDATE, REFERENCES')))
$$, 'the monitor role holds no privilege on any table, view, sequence or column of messenger');
SELECT results_eq($$
    SELECT p.oid::regprocedure::text
      FROM pg_catalog.pg_proc AS p
     WHERE p.pronamespace = 'messenger'::regnamespace
       AND pg_catalog.has_function_privilege('messenger_call_reaper_monitor', p.oid, 'EXECUTE')
       AND p.oid <> 'messenger.call_due_key(text, timestamptz, timestamptz)'::regprocedure
$$, ARRAY['messenger.call_reaper_metrics()'],
    'call_reaper_metrics is the only messenger function the monitor role may execute (but for the pure, row-free call_due_key every writer needs)');

SELECT is((SELECT count(*)::integer FROM messenger.call_reaper_metrics()), 1,
    'call_reaper_metrics returns exactly one row');

SELECT * FROM finish();
ROLLBACK;
