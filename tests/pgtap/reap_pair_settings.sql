-- messenger._reap_pair takes the settings as jsonb (to_jsonb of a call_reaper_settings row: a
-- signature Citus can create on its workers). A key it reads missing, of the wrong JSON type,
-- or a value that is no integer or interval: 22023 before anything is read or changed, on the
-- default pair and on another one. The cycle passes to_jsonb of its settings, arguments laid over.
BEGIN;
SELECT plan(10);

SELECT function_returns('messenger', '_reap_pair',
                        ARRAY['regclass', 'regclass', 'uuid', 'timestamp with time zone', 'jsonb', 'integer', 'uuid'],
                        'record', 'messenger._reap_pair takes its settings as jsonb');
SELECT ok(NOT EXISTS (SELECT FROM pg_depend AS d
                       WHERE d.classid = 'pg_proc'::regclass
                         AND d.objid = 'messenger._reap_pair(regclass, regclass, uuid, timestamptz, jsonb, integer, uuid)'::regprocedure
                         AND d.refclassid = 'pg_type'::regclass
                         AND d.refobjid IN (SELECT c.reltype FROM pg_class AS c WHERE c.relkind IN ('r', 'p'))),
          'its signature depends on no table''s row type');

\ir fixtures/second_pair.sql
CREATE TEMP TABLE quarantine_before AS SELECT * FROM messenger.call_reaper_quarantine;
-- run(calls, outbox, key taken out, keys laid over): the configured settings so edited.
PREPARE run (regclass, regclass, text, jsonb) AS
    SELECT * FROM messenger._reap_pair($1, $2, gen_random_uuid(), '2100-01-01 03:00+00',
                                       (SELECT (to_jsonb(s) - $3) || $4 FROM messenger.call_reaper_settings AS s), 63, NULL);

SELECT throws_ok($$EXECUTE run('pair_test.calls', 'pair_test.outbox', 'poison_backoff', '{}')$$,
                 '22023', NULL, 'settings missing a key it reads are refused with 22023');
SELECT throws_ok($$EXECUTE run('pair_test.calls', 'pair_test.outbox', 'stale_timeout', '{}')$$,
                 '22023', NULL, 'settings missing a phase''s window (its timeout_setting) are refused with 22023');
SELECT throws_ok($$EXECUTE run('messenger.call_sessions', 'messenger.realtime_outbox',
                                '', '{"batch_size": "many"}')$$,
                 '22023', NULL, 'a batch_size that is not a JSON number is refused with 22023, on the default pair too');
SELECT throws_ok($$EXECUTE run('pair_test.calls', 'pair_test.outbox', '', '{"ring_timeout": 45}')$$,
                 '22023', NULL, 'an interval given as a JSON number is refused with 22023');
SELECT throws_ok($$EXECUTE run('messenger.call_sessions', 'messenger.realtime_outbox',
                                '', '{"polling_interval": "soon"}')$$,
                 '22023', NULL, 'a string that is no interval is refused with 22023');
SELECT throws_ok($$EXECUTE run('pair_test.calls', 'pair_test.outbox', '', '{"batch_size": 2.5}')$$,
                 '22023', NULL, 'a batch_size that is no integer is refused with 22023');
SELECT throws_ok($$SELECT * FROM messenger._reap_pair('pair_test.calls', 'pair_test.outbox', gen_random_uuid(), '2100-01-01 03:00+00', NULL, 63, NULL)$$,
                 '22023', NULL, 'no settings at all are refused with 22023');

SELECT ok((SELECT count(*) FROM pair_test.outbox) + (SELECT count(*) FROM messenger.realtime_outbox) = 0
          AND NOT EXISTS (SELECT FROM pair_test.calls WHERE status IN ('Missed', 'Failed'))
          AND NOT EXISTS (SELECT FROM messenger.call_sessions WHERE status IN ('Missed', 'Failed'))
          AND NOT EXISTS (SELECT * FROM messenger.call_reaper_quarantine EXCEPT SELECT * FROM quarantine_before),
          'no refused run closed a call, wrote an outbox row or quarantined anything, on either pair');

SELECT * FROM finish();
ROLLBACK;
