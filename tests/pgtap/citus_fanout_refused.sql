-- The Citus fan-out's routines on a server without Citus: each refuses with 55000 before it reads
-- or changes anything, and a cycle here never reaches them (it runs the default pair, as
-- always). Their behaviour on a Citus cluster is in tests/citus/ (docs/citus.md), which make test
-- cannot run.
BEGIN;
SELECT plan(9);

CREATE TEMP TABLE before AS
    SELECT (SELECT count(*) FROM messenger.call_sessions WHERE status IN ('Missed', 'Failed')) AS closed,
           (SELECT count(*) FROM messenger.realtime_outbox) AS pushes,
           (SELECT count(*) FROM messenger.call_reaper_runs) AS runs;

SELECT is(messenger._call_reaper_distributed(), false,
          'without Citus call_sessions is not distributed: every path takes the one-server way');
SELECT throws_ok($$SELECT * FROM messenger._reap_fanout(gen_random_uuid(), now(),
                        (SELECT to_jsonb(s) FROM messenger.call_reaper_settings AS s), 63)$$,
                 '55000', NULL, 'the coordinator''s fan-out refuses a server without Citus with 55000');
SELECT throws_ok($$CALL messenger._reap_local_pairs(gen_random_uuid(), now(), '{}', 63)$$,
                 '55000', NULL, 'the worker''s loop over its shard pairs refuses a node without Citus with 55000');
SELECT throws_ok($$SELECT messenger._preview_local_pairs(now(), '{}')$$,
                 '55000', NULL, 'the worker''s preview of its shard pairs refuses a node without Citus with 55000');
SELECT throws_ok($$SELECT * FROM messenger.call_reaper_citus_prepare()$$,
                 '55000', NULL, 'preparing the workers refuses a server without Citus with 55000');
SELECT results_eq($$SELECT (SELECT count(*) FROM messenger.call_sessions WHERE status IN ('Missed', 'Failed')),
                           (SELECT count(*) FROM messenger.realtime_outbox),
                           (SELECT count(*) FROM messenger.call_reaper_runs)$$,
                  $$SELECT closed, pushes, runs FROM before$$,
                  'no refusal closed a call, wrote an outbox row or a ledger row');

-- A cycle here: the default pair, completed, its closures counted.
INSERT INTO messenger.call_sessions (call_id, caller_user_id, callee_user_id, media_type, status, started_at, updated_at)
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing',
       '2100-01-01 00:00:00+00', '2100-01-01 00:00:00+00'
  FROM generate_series(1, 50);
SELECT is((SELECT result FROM messenger.reap_call_timeouts(as_of => '2100-01-01 00:10:00+00')), 'completed',
          'a cycle on a server without Citus completes');
SELECT is((SELECT missed_count FROM messenger.call_reaper_runs WHERE as_of = '2100-01-01 00:10:00+00'), 50,
          'on the default pair: the 50 due calls are closed');
SELECT is((SELECT error_sqlstate FROM messenger.call_reaper_runs WHERE as_of = '2100-01-01 00:10:00+00'), NULL,
          'and no worker failure is recorded');

SELECT * FROM finish();
ROLLBACK;
