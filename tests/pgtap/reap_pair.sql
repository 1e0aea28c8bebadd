-- The relation-pair cycle: messenger._reap_pair on a second pair (a shard's shape, made LIKE the
-- default tables) closes exactly that pair's due calls, once, with exactly their outbox rows in
-- that pair's outbox, and leaves the default pair alone; the default pair's run leaves the
-- second pair alone. Its few calls leave no claim floor (not worth keeping: reap_pair_floor.sql
-- has a pair's own floor); neither writes a ledger row. Who may run it: the owner's cycle and operators, never the job role.
BEGIN;
SELECT plan(16);

SELECT is_definer('messenger', '_reap_pair',
                  ARRAY['regclass', 'regclass', 'uuid', 'timestamp with time zone', 'jsonb', 'integer', 'uuid'],
                  'messenger._reap_pair runs as its owner');
SELECT ok(has_function_privilege('messenger_call_reaper_operator',
                                 'messenger._reap_pair(regclass, regclass, uuid, timestamptz, jsonb, integer, uuid)', 'EXECUTE')
          AND NOT has_function_privilege('messenger_call_reaper',
                                         'messenger._reap_pair(regclass, regclass, uuid, timestamptz, jsonb, integer, uuid)', 'EXECUTE'),
          'an operator may run messenger._reap_pair, the job role may not');

\ir fixtures/second_pair.sql
CREATE TEMP TABLE floor_before AS SELECT * FROM messenger.call_reaper_claim_floor;
CREATE TEMP TABLE runs_before AS SELECT count(*) AS n FROM messenger.call_reaper_runs;

CREATE TEMP TABLE r1 AS SELECT * FROM pg_temp.reap_pair('pair_test.calls', 'pair_test.outbox', '2100-01-01 03:00+00');
SELECT is((SELECT ARRAY[missed_count, failed_count, skipped_locked_count, poisoned_count, deferred_count] FROM r1),
          ARRAY[2, 1, 0, 0, 0], 'the second pair''s run closes its two due Ringing calls and its stale Answered one');
SELECT results_eq(
    $$SELECT call_id, status::text, end_reason::text, ended_at FROM pair_test.calls ORDER BY call_id$$,
    $$SELECT call_id, CASE WHEN g IN (1, 2) THEN 'Missed' WHEN g = 4 THEN 'Failed' ELSE status END,
             CASE WHEN g IN (1, 2) THEN 'Timeout' WHEN g = 4 THEN 'Error' END,
             CASE WHEN g IN (1, 2, 4) THEN timestamptz '2100-01-01 03:00+00' END
        FROM (SELECT *, right(call_id::text, 1)::integer AS g FROM pair_calls WHERE pair = 'second') AS c
       ORDER BY call_id$$,
    'exactly the due calls of the second pair are closed, at as_of; the others stay active');
SELECT results_eq(
    $$SELECT kind::text, target_id, reference_id, payload ->> 'status', correlation_id FROM pair_test.outbox ORDER BY id$$,
    $$VALUES ('CallMissed'::text, 'user:00000000-0000-0000-0000-0000000cb001'::text, 'b0000000-0000-0000-0000-000000000001'::uuid, 'Missed'::text, (SELECT run_id FROM r1)),
             ('CallMissed', 'user:00000000-0000-0000-0000-0000000cb002', 'b0000000-0000-0000-0000-000000000002', 'Missed', (SELECT run_id FROM r1)),
             ('CallEnded', 'user:00000000-0000-0000-0000-0000000cb004', 'b0000000-0000-0000-0000-000000000004', 'Failed', (SELECT run_id FROM r1)),
             ('CallEnded', 'user:00000000-0000-0000-0000-0000000eb004', 'b0000000-0000-0000-0000-000000000004', 'Failed', (SELECT run_id FROM r1))$$,
    'the second pair''s outbox holds exactly their rows: a CallMissed to each caller, a CallEnded to both parties');
SELECT is((SELECT count(*)::integer FROM messenger.realtime_outbox), 0, 'the default outbox gets none of them');
SELECT results_eq(
    $$SELECT call_id, status::text, ended_at FROM messenger.call_sessions ORDER BY call_id$$,
    $$SELECT call_id, status, NULL::timestamptz FROM pair_calls WHERE pair = 'default' ORDER BY call_id$$,
    'the default pair''s calls, due as well, are untouched');
SELECT bag_eq('SELECT * FROM messenger.call_reaper_claim_floor', 'SELECT * FROM floor_before',
              'a run over a pair''s few calls stores no claim floor, and the default pair''s is untouched');

CREATE TEMP TABLE r2 AS SELECT * FROM pg_temp.reap_pair('pair_test.calls', 'pair_test.outbox', '2100-01-01 03:00:15+00');
SELECT is((SELECT ARRAY[missed_count, failed_count] FROM r2), ARRAY[0, 0], 'a second run on the second pair closes nothing more');
SELECT is((SELECT count(*)::integer FROM pair_test.outbox), 4, 'and adds no outbox row: each call is closed once');

CREATE TEMP TABLE r3 AS SELECT * FROM pg_temp.reap_pair('messenger.call_sessions', 'messenger.realtime_outbox', '2100-01-01 03:00+00');
SELECT is((SELECT ARRAY[missed_count, failed_count] FROM r3), ARRAY[2, 1], 'the default pair''s run closes its own due calls');
SELECT is(ARRAY(SELECT reference_id::text FROM messenger.realtime_outbox WHERE correlation_id = (SELECT run_id FROM r3) ORDER BY id),
          ARRAY['a0000000-0000-0000-0000-000000000001', 'a0000000-0000-0000-0000-000000000002',
                'a0000000-0000-0000-0000-000000000004', 'a0000000-0000-0000-0000-000000000004'],
          'with their four rows in the default outbox');
SELECT is((SELECT count(*)::integer FROM pair_test.outbox), 4, 'and none in the second pair''s outbox');
SELECT is(ARRAY(SELECT status::text FROM pair_test.calls ORDER BY call_id), ARRAY['Missed', 'Missed', 'Ringing', 'Failed', 'Answered'],
          'the second pair is as its own run left it');
SELECT is((SELECT count(*) FROM messenger.call_reaper_runs), (SELECT n FROM runs_before),
          'a pair''s run writes no ledger row: the cycle that calls it does');

-- The cycle runs the default pair: the same as a cycle always did.
CREATE TEMP TABLE c AS SELECT * FROM messenger.reap_call_timeouts(as_of => '2100-01-01 03:00:30+00');
SELECT is((SELECT ARRAY[missed_count, failed_count] FROM c), ARRAY[0, 0],
          'a cycle after both runs finds nothing left to close on the default pair');

SELECT * FROM finish();
ROLLBACK;
