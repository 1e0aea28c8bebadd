-- Ring-timeout (INV-CALL-2): Ringing with started_at <= as_of - ring_timeout becomes Missed with
-- one CallMissed outbox row to the caller, in the same transaction. The cutoff is inclusive:
-- exactly at it is reaped, one microsecond inside the window is not.
BEGIN;
SELECT plan(12);

-- as_of 2100-01-01 00:01:00, ring_timeout 45 s: cutoff 00:00:15.
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, updated_at)
VALUES ('00000000-0000-0000-0000-0000000000b1', '00000000-0000-0000-0000-00000000c001',
        '00000000-0000-0000-0000-00000000c002', 'Video', 'Ringing',
        '2100-01-01 00:00:15+00', '2100-01-01 00:00:15+00'),               -- exactly at the cutoff
       ('00000000-0000-0000-0000-0000000000b2', gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing',
        '2100-01-01 00:00:15.000001+00', '2100-01-01 00:00:15.000001+00'); -- 1 µs inside the window

CREATE TEMP TABLE r AS
SELECT * FROM messenger.reap_call_timeouts(ring_timeout => '45 seconds', as_of => '2100-01-01 00:01:00+00');

SELECT is((SELECT missed_count FROM r), 1, 'one call is reported missed');
SELECT results_eq(
    $$SELECT status, end_reason, ended_at, updated_at, answered_at, duration_seconds
        FROM messenger.call_sessions WHERE call_id = '00000000-0000-0000-0000-0000000000b1'$$,
    $$VALUES ('Missed'::text, 'Timeout'::text, '2100-01-01 00:01:00+00'::timestamptz,
              '2100-01-01 00:01:00+00'::timestamptz, NULL::timestamptz, NULL::integer)$$,
    'a call exactly at the cutoff becomes Missed/Timeout with ended_at = updated_at = as_of');
SELECT is((SELECT status FROM messenger.call_sessions WHERE call_id = '00000000-0000-0000-0000-0000000000b2'),
          'Ringing', 'a call one microsecond inside its answer window keeps ringing');
SELECT is((SELECT ended_at FROM messenger.call_sessions WHERE call_id = '00000000-0000-0000-0000-0000000000b2'),
          NULL, 'the call inside its window has no ended_at');

SELECT is((SELECT count(*)::integer FROM messenger.realtime_outbox
            WHERE reference_id = '00000000-0000-0000-0000-0000000000b1'),
          1, 'a missed call gets exactly one outbox row');
SELECT results_eq(
    $$SELECT kind, target_kind, target_id, payload, correlation_id, dispatched_at
        FROM messenger.realtime_outbox WHERE reference_id = '00000000-0000-0000-0000-0000000000b1'$$,
    $$SELECT 'CallMissed'::text, 'User'::text, 'user:00000000-0000-0000-0000-00000000c001'::text,
             '{"callId": "00000000-0000-0000-0000-0000000000b1", "status": "Missed", "mediaType": "Video"}'::jsonb,
             (SELECT run_id FROM r), NULL::timestamptz$$,
    'the CallMissed row goes to the caller, carries only callId/status/mediaType and the run id');
SELECT is((SELECT count(*)::integer FROM messenger.realtime_outbox
            WHERE reference_id = '00000000-0000-0000-0000-0000000000b2'),
          0, 'a call still ringing gets no outbox row');

-- One microsecond later the second call's window has passed too.
CREATE TEMP TABLE r2 AS
SELECT * FROM messenger.reap_call_timeouts(ring_timeout => '45 seconds', as_of => '2100-01-01 00:01:00.000001+00');
SELECT is((SELECT missed_count FROM r2), 1, 'one microsecond later the second call is missed');
SELECT is((SELECT status FROM messenger.call_sessions WHERE call_id = '00000000-0000-0000-0000-0000000000b2'),
          'Missed', 'the second call is Missed once its window has passed');

-- Answered within the window: a Ringing call answered before the tick is not phase 1's.
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
VALUES ('00000000-0000-0000-0000-0000000000b3', gen_random_uuid(), gen_random_uuid(), 'Audio', 'Answered',
        '2100-01-01 00:00:00+00', '2100-01-01 00:00:10+00', '2100-01-01 00:00:10+00');
CREATE TEMP TABLE r3 AS
SELECT * FROM messenger.reap_call_timeouts(as_of => '2100-01-01 00:05:00+00');
SELECT is((SELECT missed_count FROM r3), 0, 'a call answered within its window is not missed');
SELECT is((SELECT status FROM messenger.call_sessions WHERE call_id = '00000000-0000-0000-0000-0000000000b3'),
          'Answered', 'a call answered within its window stays Answered');
SELECT is((SELECT count(*)::integer FROM messenger.realtime_outbox
            WHERE reference_id = '00000000-0000-0000-0000-0000000000b3'),
          0, 'a call answered within its window gets no outbox row');

SELECT * FROM finish();
ROLLBACK;
