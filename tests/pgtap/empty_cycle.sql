-- Empty batch: nothing active past its window is a no-op success (no mutation, no event).
BEGIN;
SELECT plan(6);

INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
VALUES ('00000000-0000-0000-0000-0000000000a1', gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing',
        '2100-01-01 00:00:00+00', NULL, '2100-01-01 00:00:00+00'),
       ('00000000-0000-0000-0000-0000000000a2', gen_random_uuid(), gen_random_uuid(), 'Video', 'Answered',
        '2100-01-01 00:00:00+00', '2100-01-01 00:00:05+00', '2100-01-01 00:00:05+00');
CREATE TEMP TABLE before_calls AS SELECT * FROM messenger.call_sessions;
CREATE TEMP TABLE outbox_before AS SELECT count(*) AS n FROM messenger.realtime_outbox;

-- Clock readings either side of the cycle bound what it may report as its duration.
CREATE TEMP TABLE clock_before AS SELECT clock_timestamp() AS t;
CREATE TEMP TABLE r AS
SELECT * FROM messenger.reap_call_timeouts(as_of => '2100-01-01 00:00:30+00');
CREATE TEMP TABLE clock_after AS SELECT clock_timestamp() AS t;

SELECT is((SELECT result FROM r), 'completed', 'an empty cycle completes');
SELECT ok((SELECT lock_acquired FROM r), 'an empty cycle takes the lock');
SELECT is((SELECT ARRAY[missed_count, failed_count, skipped_locked_count, poisoned_count] FROM r),
          ARRAY[0, 0, 0, 0], 'an empty cycle reports zero counts');
SELECT set_eq('SELECT * FROM messenger.call_sessions', 'SELECT * FROM before_calls',
              'an empty cycle changes no call');
SELECT is((SELECT count(*) FROM messenger.realtime_outbox), (SELECT n FROM outbox_before),
          'an empty cycle writes no outbox row');
SELECT ok((SELECT r.duration_ms > 0
                   AND r.duration_ms <= extract(epoch FROM a.t - b.t) * 1000
              FROM r, clock_before AS b, clock_after AS a),
          'an empty cycle reports its duration: more than nothing, in milliseconds, within the clock readings around it');

SELECT * FROM finish();
ROLLBACK;
