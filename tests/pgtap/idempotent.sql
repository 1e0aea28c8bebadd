-- Idempotency: a second cycle over calls the first one closed changes nothing and writes no
-- second outbox row.
BEGIN;
SELECT plan(4);

INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing',
       '2100-01-01 00:00+00'::timestamptz + g * interval '1 second', NULL::timestamptz,
       '2100-01-01 00:00+00'::timestamptz + g * interval '1 second'
  FROM generate_series(1, 5) AS g
UNION ALL
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Video', 'Answered',
       '2100-01-01 00:00+00', '2100-01-01 00:00:05+00', '2100-01-01 00:00:05+00'::timestamptz + g * interval '1 second'
  FROM generate_series(1, 3) AS g;

CREATE TEMP TABLE r1 AS SELECT * FROM messenger.reap_call_timeouts(as_of => '2100-01-01 06:00+00');
CREATE TEMP TABLE calls_after_first AS SELECT * FROM messenger.call_sessions;
CREATE TEMP TABLE outbox_after_first AS SELECT * FROM messenger.realtime_outbox;
CREATE TEMP TABLE r2 AS SELECT * FROM messenger.reap_call_timeouts(as_of => '2100-01-01 06:00:15+00');

SELECT is((SELECT ARRAY[missed_count, failed_count] FROM r1), ARRAY[5, 3], 'the first cycle closes all eight calls');
SELECT is((SELECT ARRAY[missed_count, failed_count] FROM r2), ARRAY[0, 0], 'the second cycle closes nothing');
SELECT set_eq('SELECT * FROM messenger.call_sessions', 'SELECT * FROM calls_after_first',
              'the second cycle changes no call');
SELECT set_eq('SELECT * FROM messenger.realtime_outbox', 'SELECT * FROM outbox_after_first',
              'the second cycle writes no outbox row');

SELECT * FROM finish();
ROLLBACK;
