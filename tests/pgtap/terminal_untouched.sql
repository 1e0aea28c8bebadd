-- INV-CALL-3: terminal calls (Missed, Ended, Declined, Failed) are never selected or touched,
-- however old they are.
BEGIN;
SELECT plan(3);

INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, end_reason, started_at,
        answered_at, ended_at, updated_at, duration_seconds)
VALUES ('00000000-0000-0000-0000-00000000fe01', gen_random_uuid(), gen_random_uuid(), 'Audio', 'Missed', 'Timeout',
        '2099-01-01 00:00+00', NULL, '2099-01-01 00:01+00', '2099-01-01 00:01+00', NULL),
       ('00000000-0000-0000-0000-00000000fe02', gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ended', 'Hangup',
        '2099-01-01 00:00+00', '2099-01-01 00:00:05+00', '2099-01-01 00:10+00', '2099-01-01 00:10+00', 595),
       ('00000000-0000-0000-0000-00000000fe03', gen_random_uuid(), gen_random_uuid(), 'Video', 'Declined', 'Declined',
        '2099-01-01 00:00+00', NULL, '2099-01-01 00:00:03+00', '2099-01-01 00:00:03+00', NULL),
       ('00000000-0000-0000-0000-00000000fe04', gen_random_uuid(), gen_random_uuid(), 'Video', 'Failed', 'Error',
        '2099-01-01 00:00+00', '2099-01-01 00:00:05+00', '2099-01-01 03:00+00', '2099-01-01 03:00+00', NULL);
CREATE TEMP TABLE before_calls AS
SELECT * FROM messenger.call_sessions WHERE call_id::text LIKE '00000000-0000-0000-0000-00000000fe0%';

CREATE TEMP TABLE r AS
SELECT * FROM messenger.reap_call_timeouts(as_of => '2100-06-01 00:00+00');

SELECT is((SELECT ARRAY[missed_count, failed_count] FROM r), ARRAY[0, 0],
          'a cycle over terminal calls closes nothing');
SELECT set_eq($$SELECT * FROM messenger.call_sessions WHERE call_id::text LIKE '00000000-0000-0000-0000-00000000fe0%'$$,
              'SELECT * FROM before_calls',
              'terminal calls are left exactly as they were');
SELECT is((SELECT count(*)::integer FROM messenger.realtime_outbox o
            JOIN before_calls b ON b.call_id = o.reference_id),
          0, 'terminal calls get no outbox row');

SELECT * FROM finish();
ROLLBACK;
