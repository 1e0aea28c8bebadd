-- Stale-answered: Answered with updated_at <= as_of - stale_timeout becomes Failed/Error with
-- duration_seconds NULL and one CallEnded row per party; an answered call with recent progress
-- is untouched.
BEGIN;
SELECT plan(9);

-- as_of 2100-01-01 03:00, stale_timeout 2 h: cutoff 01:00.
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
VALUES ('00000000-0000-0000-0000-0000000000d1', '00000000-0000-0000-0000-00000000d0a1',
        '00000000-0000-0000-0000-00000000d0b1', 'Audio', 'Answered',
        '2100-01-01 00:00:00+00', '2100-01-01 00:00:10+00', '2100-01-01 01:00:00+00'),        -- at the cutoff
       ('00000000-0000-0000-0000-0000000000d2', gen_random_uuid(), gen_random_uuid(), 'Video', 'Answered',
        '2100-01-01 00:00:00+00', '2100-01-01 00:00:10+00', '2100-01-01 01:00:00.000001+00'); -- progress 1 µs later

CREATE TEMP TABLE r AS
SELECT * FROM messenger.reap_call_timeouts(stale_timeout => '2 hours', as_of => '2100-01-01 03:00:00+00');

SELECT is((SELECT failed_count FROM r), 1, 'one stale call is reported failed');
SELECT is((SELECT missed_count FROM r), 0, 'a stale answered call is not counted as missed');
SELECT results_eq(
    $$SELECT status, end_reason, ended_at, updated_at, answered_at, duration_seconds
        FROM messenger.call_sessions WHERE call_id = '00000000-0000-0000-0000-0000000000d1'$$,
    $$VALUES ('Failed'::text, 'Error'::text, '2100-01-01 03:00:00+00'::timestamptz,
              '2100-01-01 03:00:00+00'::timestamptz, '2100-01-01 00:00:10+00'::timestamptz, NULL::integer)$$,
    'a stale answered call becomes Failed/Error, ended at as_of, answered_at kept, duration NULL');
SELECT results_eq(
    $$SELECT kind, target_kind, target_id, payload, correlation_id
        FROM messenger.realtime_outbox WHERE reference_id = '00000000-0000-0000-0000-0000000000d1'
       ORDER BY id$$,
    $$VALUES ('CallEnded'::text, 'User'::text, 'user:00000000-0000-0000-0000-00000000d0a1'::text,
              '{"callId": "00000000-0000-0000-0000-0000000000d1", "status": "Failed", "mediaType": "Audio"}'::jsonb,
              (SELECT run_id FROM r)),
             ('CallEnded'::text, 'User'::text, 'user:00000000-0000-0000-0000-00000000d0b1'::text,
              '{"callId": "00000000-0000-0000-0000-0000000000d1", "status": "Failed", "mediaType": "Audio"}'::jsonb,
              (SELECT run_id FROM r))$$,
    'a failed call gets one CallEnded row for the caller, then one for the callee');
SELECT is((SELECT status FROM messenger.call_sessions WHERE call_id = '00000000-0000-0000-0000-0000000000d2'),
          'Answered', 'an answered call with progress inside the window stays Answered');
SELECT is((SELECT count(*)::integer FROM messenger.realtime_outbox
            WHERE reference_id = '00000000-0000-0000-0000-0000000000d2'),
          0, 'an answered call with recent progress gets no outbox row');

-- A long call that keeps making progress is never failed, however old it is.
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
VALUES ('00000000-0000-0000-0000-0000000000d3', gen_random_uuid(), gen_random_uuid(), 'Video', 'Answered',
        '2099-12-25 00:00:00+00', '2099-12-25 00:00:10+00', '2100-01-01 02:59:00+00');
CREATE TEMP TABLE r2 AS
SELECT * FROM messenger.reap_call_timeouts(as_of => '2100-01-01 03:00:00+00');
SELECT is((SELECT failed_count FROM r2), 0, 'a week-long call with recent progress is not failed');
SELECT is((SELECT status FROM messenger.call_sessions WHERE call_id = '00000000-0000-0000-0000-0000000000d3'),
          'Answered', 'phase 2 measures progress (updated_at), not talk time');
SELECT is((SELECT count(*)::integer FROM messenger.realtime_outbox
            WHERE reference_id = '00000000-0000-0000-0000-0000000000d3'),
          0, 'the long live call gets no outbox row');

SELECT * FROM finish();
ROLLBACK;
