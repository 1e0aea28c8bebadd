-- The claim floor is the Ringing phase's only (messenger._reap_floor_trusted check (e),
-- messenger._reap_save_floor). ix_call_due's key is started_at; a Ringing call is due by it, an
-- Answered one by updated_at, which the key does not order: a call still talking below a floor
-- becomes due later without moving. So a full stale-answered drain stores no floor, a stored one
-- (an older release's) is never trusted, and a call below where a floor would stand is closed
-- as soon as it is due, by the next cycle of the drain. The Ringing phase, beside it, keeps its
-- floor as before.
BEGIN;
SELECT plan(7);

DELETE FROM messenger.call_reaper_claim_floor;
-- At as_of 12:00 (stale 2 h: cutoff 10:00, ring 45 s: cutoff 11:59:15): 30 stale Answered calls
-- that started 08:00-08:29, and below them all a long call, started 07:00, still talking
-- (progress at 11:00): it is due from 13:00 on.
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Video', 'Answered', t, t, t + interval '30 minutes'
  FROM generate_series(0, 29) AS g, LATERAL (SELECT timestamptz '2100-01-01 08:00+00' + g * interval '1 minute') AS x (t)
UNION ALL
SELECT '00000000-0000-0000-0000-0000000000c1', gen_random_uuid(), gen_random_uuid(), 'Audio', 'Answered',
       '2100-01-01 07:00+00', '2100-01-01 07:00+00', '2100-01-01 11:00+00'
UNION ALL
-- And 30 overdue Ringing calls: that phase's floor is the contrast.
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing', t, NULL, t
  FROM generate_series(0, 29) AS g, LATERAL (SELECT timestamptz '2100-01-01 11:00+00' + g * interval '1 second') AS x (t);

-- Batch 10: every lane full, a drain under way.
CREATE TEMP TABLE c1 AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 10, as_of => '2100-01-01 12:00+00');
SELECT is((SELECT ARRAY[missed_count, failed_count] FROM c1), ARRAY[10, 10], 'the first cycle closes a full batch per phase');
SELECT is((SELECT count(*)::integer FROM messenger.call_reaper_claim_floor WHERE phase = 'ring_timeout'), 1,
          'the Ringing phase keeps a floor past its full batch');
SELECT is((SELECT count(*)::integer FROM messenger.call_reaper_claim_floor WHERE phase = 'stale_answered'), 0,
          'the stale-answered phase stores no floor, full batch or not');

-- A floor an older release stored for stale_answered, passing checks (a)-(d): not trusted.
INSERT INTO messenger.call_reaper_claim_floor
       (phase, due_key, call_id, reset_at, as_of, run_id, anchor_started_at, vacuums, swept, passed)
SELECT 'stale_answered', s.started_at, s.call_id, '2100-01-01 12:00+00', '2100-01-01 12:00+00', c1.run_id,
       s.started_at, f.vacuums, false, 10
  FROM messenger.call_sessions AS s, c1, messenger.call_reaper_claim_floor AS f
 WHERE s.status = 'Failed' AND f.phase = 'ring_timeout'
 ORDER BY s.started_at DESC LIMIT 1;
SELECT is(messenger._reap_floor_trusted(
              ROW('stale_answered', gen_random_uuid(), '2100-01-01 13:00+00', '2 hours', 10, '15 seconds',
                  '1 minute', '1 hour', 63, NULL, 'messenger.call_sessions', 'messenger.realtime_outbox')::messenger.call_reaper_phase_run,
              (SELECT f FROM messenger.call_reaper_claim_floor AS f WHERE f.phase = 'stale_answered'),
              (SELECT f.vacuums FROM messenger.call_reaper_claim_floor AS f WHERE f.phase = 'ring_timeout')),
          false, '(e) a stale-answered floor is never trusted, whatever (a)-(d) say');
SELECT is(messenger._reap_floor_trusted(
              ROW('ring_timeout', gen_random_uuid(), '2100-01-01 12:00:30+00', '45 seconds', 10, '15 seconds',
                  '1 minute', '1 hour', 63, NULL, 'messenger.call_sessions', 'messenger.realtime_outbox')::messenger.call_reaper_phase_run,
              (SELECT f FROM messenger.call_reaper_claim_floor AS f WHERE f.phase = 'ring_timeout'),
              (SELECT f.vacuums FROM messenger.call_reaper_claim_floor AS f WHERE f.phase = 'ring_timeout')),
          true, 'while the Ringing floor beside it is');

-- 13:00: the long call's window is over; the drain goes on (20 stale calls left, batch 10).
CREATE TEMP TABLE c2 AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 10, as_of => '2100-01-01 13:00+00');
SELECT is((SELECT status FROM messenger.call_sessions WHERE call_id = '00000000-0000-0000-0000-0000000000c1'),
          'Failed', 'the call below the drain''s position is failed by the first cycle it is due in');
SELECT is((SELECT count(*)::integer FROM messenger.call_reaper_claim_floor WHERE phase = 'stale_answered'), 0,
          'and the stored stale-answered floor is gone');

SELECT * FROM finish();
ROLLBACK;
