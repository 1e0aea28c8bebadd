-- Each statement of the cycle on the relation pair is written once: the default pair's static
-- statement, marked "-- pair: <name>", which another pair (a Citus shard pair) runs through
-- EXECUTE messenger._reap_pair_sql(<routine>, <name>, <calls>, <outbox>, <variables>) ... USING
-- <the same variables>. Here every routine's source is read as deployed:
--   - each marked statement has exactly one such EXECUTE, in its own routine, whose variable
--     names are its USING list, in order;
--   - each one spells, for a second pair, a text on that pair's relations that names no
--     PL/pgSQL variable any more;
--   - no statement reads or writes the default pair on the cycle's path without its mark;
-- and what _reap_pair_sql spells (variables as $n, relations, the outbox id's slots) and
-- refuses (42704, 22023) is checked on known statements.
BEGIN;
SELECT plan(16);

\ir fixtures/second_pair.sql

-- The routines that take the pair: a calls relation (p_calls) or a phase run (p_run.calls).
CREATE TEMP TABLE routines AS
SELECT p.oid::regprocedure AS routine, p.prosrc
  FROM pg_proc AS p
 WHERE p.pronamespace = 'messenger'::regnamespace
   AND ('p_calls' = ANY (p.proargnames) OR 'messenger.call_reaper_phase_run'::regtype = ANY (p.proargtypes::oid[]))
   AND p.proname <> '_reap_pair_sql';
CREATE TEMP TABLE markers AS
SELECT r.routine::oid AS routine, m[1] AS name
  FROM routines AS r, regexp_matches(r.prosrc, '-- pair: ([^\n]+)\n', 'g') AS m;
CREATE TEMP TABLE sites AS
SELECT r.routine::oid AS routine, m[1]::regproc::oid AS named, m[2] AS name,
       ARRAY(SELECT x[1] FROM regexp_matches(m[3], '''([^'']+)''', 'g') AS x) AS params,
       regexp_split_to_array(btrim(m[4], E' \n'), '\s*,\s*') AS using_list
  FROM routines AS r,
       regexp_matches(r.prosrc,
                      '_reap_pair_sql\(''([^'']+)'', ''([^'']+)'', [^,]+, [^,]+((?:,\s*''[^'']+'')*)\)'
                      || '\s*(?:INTO [^\n]*\n\s*)?USING ([^;]*);', 'g') AS m;

SELECT is((SELECT count(*)::integer FROM markers), 9,
          'nine statements of the cycle are marked as the pair''s (claim, retries, first healthy, retried left, close, first passed, anchored, last answered, anchor)');
SELECT set_eq('SELECT routine, name FROM sites', 'SELECT routine, name FROM markers',
              'each marked statement has one EXECUTE of _reap_pair_sql for another pair, and each EXECUTE a marked statement');
SELECT is((SELECT count(*)::integer FROM sites), (SELECT count(DISTINCT (routine, name))::integer FROM sites),
          'no statement is executed twice');
SELECT is((SELECT array_agg(routine::regproc::text) FROM sites WHERE named <> routine), NULL,
          'each EXECUTE reads its own routine''s statement');
SELECT is((SELECT array_agg(name) FROM sites WHERE params <> using_list), NULL,
          'each EXECUTE names its variables in the order of its USING');

CREATE FUNCTION pg_temp.spelled(p_routine regproc, p_name text, p_outbox regclass, p_params text[]) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    RETURN messenger._reap_pair_sql(p_routine, p_name, 'pair_test.calls', p_outbox, VARIADIC p_params);
EXCEPTION WHEN OTHERS THEN
    RETURN 'ERROR ' || SQLSTATE || ': ' || SQLERRM;
END
$$;
CREATE TEMP TABLE spelled AS
SELECT s.name, pg_temp.spelled(s.routine::regproc, s.name, 'pair_test.outbox_noid', s.params) AS sql FROM sites AS s;
SELECT is((SELECT array_agg(name || ': ' || sql) FROM spelled WHERE sql LIKE 'ERROR %'), NULL,
          'every statement spells for a second pair, with every variable it names passed');
SELECT is((SELECT array_agg(name) FROM spelled WHERE sql ~ '\mmessenger\.(call_sessions|realtime_outbox)\M' OR sql !~ '\mpair_test\.calls\M'),
          NULL, 'every spelled statement reads the second pair''s calls and never the default pair');

-- Outside its marked statements no routine of the pair reads or writes the default pair
-- (a declaration's %TYPE is not a read).
CREATE FUNCTION pg_temp.unmarked(p_src text) RETURNS text LANGUAGE sql AS $$
    SELECT regexp_replace(p_src, '-- pair: [^\n]+\n.*?;\n', '', 'g')
$$;
SELECT is((SELECT array_agg(routine::text) FROM routines
            WHERE pg_temp.unmarked(prosrc) ~ '\m(FROM|UPDATE|INTO|JOIN)\s+messenger\.(call_sessions|realtime_outbox)\M(?!\.)'),
          NULL, 'no routine of the pair reads or writes the default pair outside a marked statement');

-- What it spells, on known statements.
SELECT is(regexp_replace(messenger._reap_pair_sql('messenger._reap_save_floor', 'anchor', 'pair_test.calls', NULL, 'v_id'), '\s+', ' ', 'g'),
          ' SELECT a.started_at FROM pair_test.calls AS a WHERE a.call_id = $1 LIMIT 1',
          'the anchor probe: INTO dropped, the variable as $1, the pair''s calls relation');
SELECT ok(messenger._reap_pair_sql('messenger._reap_lanes', 'first healthy', 'pair_test.calls', NULL,
                                   'v_status', 'l.backlog_key', 'l.backlog_id', 'l.fresh_from', 'c_uuid_max')
          LIKE '%s.started_at >= $2 + CASE WHEN $3 = $5 THEN%',
          'a record''s fields are variables too, each as its $n');
SELECT ok((SELECT sql LIKE '%(id, kind,%' AND sql LIKE '%SELECT pg_catalog.nextval(''messenger.realtime_outbox_id_seq''::pg_catalog.regclass), $8,%'
             FROM spelled WHERE name = 'close'),
          'an outbox whose id has no default gets id named and numbered by the default outbox''s sequence');
SELECT ok((SELECT sql !~ '\mid, kind' AND sql !~ 'nextval' AND sql LIKE '%INSERT INTO pair_test.outbox%'
             FROM (SELECT pg_temp.spelled(s.routine::regproc, s.name, 'pair_test.outbox', s.params) AS sql
                     FROM sites AS s WHERE s.name = 'close') AS x),
          'an outbox with its own id default numbers its rows itself');

-- What it refuses.
SELECT throws_ok($$SELECT messenger._reap_pair_sql('messenger._reap_save_floor', 'no such', 'pair_test.calls', NULL)$$,
                 '42704', NULL, 'a statement the routine does not mark is refused (42704)');
SELECT throws_ok($$SELECT messenger._reap_pair_sql('messenger._reap_save_floor', 'anchor', 'pair_test.calls', NULL)$$,
                 '22023', 'the statement "anchor" of messenger._reap_save_floor still names v_id',
                 'a variable the statement names but the call does not pass is refused (22023)');
SELECT throws_ok($$SELECT messenger._reap_pair_sql('messenger._reap_save_floor', 'anchor', 'pair_test.calls', NULL, 'v_id', 'v_key')$$,
                 '22023', 'the statement "anchor" of messenger._reap_save_floor does not use v_key',
                 'a variable the statement does not use is refused (22023): a misspelt name would shift every $n after it');
SELECT throws_ok($$SELECT messenger._reap_pair_sql('messenger._reap_close', 'close', 'pair_test.calls', NULL,
                      'v_to', 'v_end_reason', 'p_run.as_of', 'v_ids', 'v_started', 'v_due', 'v_from', 'v_kind',
                      'v_target_kind', 'p_run.run_id', 'v_both')$$,
                 '22023', NULL, 'the outbox statement without the pair''s outbox is refused (22023)');

SELECT * FROM finish();
ROLLBACK;
