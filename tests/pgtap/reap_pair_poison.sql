-- Poison on a second pair: messenger._reap_pair bisects the poison calls out of the pair's
-- batch, quarantines them (the quarantine is shared, keyed by call_id) and closes the rest; its
-- retry lane retries only the pair's own quarantined calls and never deletes the default
-- pair's quarantine rows as gone; once the poison is cured its calls close and leave the
-- quarantine.
BEGIN;
SELECT plan(8);
SET LOCAL client_min_messages = error;   -- the call_poisoned WARNINGs are expected

\ir fixtures/second_pair.sql
UPDATE messenger.call_sessions SET caller_user_id = '00000000-0000-0000-0000-00000000dead'
 WHERE call_id = 'a0000000-0000-0000-0000-000000000001';
UPDATE pair_test.calls SET caller_user_id = '00000000-0000-0000-0000-00000000dead'
 WHERE call_id IN ('b0000000-0000-0000-0000-000000000001', 'b0000000-0000-0000-0000-000000000004');
-- The product trigger of poison_caller.sql, on both pairs: calls of caller ...dead refuse to close.
\ir fixtures/poison_caller.sql
CREATE TRIGGER test_poison BEFORE UPDATE ON pair_test.calls
    FOR EACH ROW EXECUTE FUNCTION pg_temp.refuse_poison_call();

-- The default pair quarantines its poison call first.
CREATE TEMP TABLE d1 AS SELECT * FROM pg_temp.reap_pair('messenger.call_sessions', 'messenger.realtime_outbox', '2100-01-01 03:00+00');
CREATE TEMP TABLE r1 AS SELECT * FROM pg_temp.reap_pair('pair_test.calls', 'pair_test.outbox', '2100-01-01 03:00+00');
SELECT is((SELECT ARRAY[missed_count, failed_count, poisoned_count] FROM r1), ARRAY[1, 0, 2],
          'the second pair''s run bisects out its two poison calls and closes its healthy due call');
SELECT results_eq(
    $$SELECT call_id::text, phase, attempts, last_run_id FROM messenger.call_reaper_quarantine ORDER BY call_id$$,
    $$VALUES ('a0000000-0000-0000-0000-000000000001', 'ring_timeout', 1, (SELECT run_id FROM d1)),
             ('b0000000-0000-0000-0000-000000000001', 'ring_timeout', 1, (SELECT run_id FROM r1)),
             ('b0000000-0000-0000-0000-000000000004', 'stale_answered', 1, (SELECT run_id FROM r1))$$,
    'each poison call is quarantined under its phase, beside the default pair''s');
SELECT is(ARRAY(SELECT status::text FROM pair_test.calls ORDER BY call_id), ARRAY['Ringing', 'Missed', 'Ringing', 'Answered', 'Answered'],
          'the poison calls are left active, the healthy due one closed');
SELECT is((SELECT count(*)::integer FROM pair_test.outbox WHERE reference_id = 'b0000000-0000-0000-0000-000000000002'), 1,
          'the healthy call has its outbox row; the poison ones none');

-- After the backoff (1 minute): the second pair's retry lane takes its own calls only.
CREATE TEMP TABLE r2 AS SELECT * FROM pg_temp.reap_pair('pair_test.calls', 'pair_test.outbox', '2100-01-01 03:01:30+00');
SELECT results_eq(
    $$SELECT call_id::text, attempts FROM messenger.call_reaper_quarantine ORDER BY call_id$$,
    $$VALUES ('a0000000-0000-0000-0000-000000000001', 1),
             ('b0000000-0000-0000-0000-000000000001', 2),
             ('b0000000-0000-0000-0000-000000000004', 2)$$,
    'the second pair retries its own quarantined calls and leaves the default pair''s row, whose call it does not hold');

-- Cured: the next retry closes them and they leave the quarantine.
DROP TRIGGER test_poison ON pair_test.calls;
CREATE TEMP TABLE r3 AS SELECT * FROM pg_temp.reap_pair('pair_test.calls', 'pair_test.outbox', '2100-01-01 03:10+00');
SELECT is((SELECT ARRAY[missed_count, failed_count, poisoned_count] FROM r3), ARRAY[1, 1, 0],
          'once the poison is cured the retry lane closes both calls');
SELECT is(ARRAY(SELECT call_id::text FROM messenger.call_reaper_quarantine ORDER BY call_id),
          ARRAY['a0000000-0000-0000-0000-000000000001'], 'the closed calls leave the quarantine; the default pair''s row stays');
SELECT is((SELECT count(*)::integer FROM pair_test.outbox WHERE correlation_id = (SELECT run_id FROM r3)), 3,
          'with their outbox rows in the second pair''s outbox: one CallMissed, two CallEnded');

SELECT * FROM finish();
ROLLBACK;
