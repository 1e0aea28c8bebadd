-- The stale-answered phase's claim floor (messenger._reap_save_floor, messenger._reap_floor_trusted
-- check (e)). ix_call_due's key is started_at; an Answered call is due by updated_at, which the
-- key does not order, so below a floor may lie calls still talking. The floor keeps
-- talking_since, the least of the earliest updated_at of those it walked and its cycle's as_of,
-- and is trusted only while the cutoff stays before talking_since minus the fresh window (15 s).
-- So a walk past 20 talkers stores a floor, an idle cycle over it writes nothing, trust ends
-- exactly at talking_since - fresh, a talker below it that stops progressing is failed by the
-- first cycle it is due in, a call answered late below a drain's floor is failed when due, and
-- a quarantined call the retry lane releases below the floor resets it, even in a cycle that
-- moves it.
BEGIN;
SELECT plan(15);

DELETE FROM messenger.call_reaper_claim_floor;
-- At as_of 12:00 (stale 2 h: cutoff 10:00): 30 stale Answered calls that started 08:00-08:29,
-- and below them all 20 long calls started 07:00-07:19, still talking: the first (c1) last
-- progressed at 10:30 (due from 12:30 on), the others at 11:00-11:19.
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Video', 'Answered', t, t, t + interval '30 minutes'
  FROM generate_series(0, 29) AS g, LATERAL (SELECT timestamptz '2100-01-01 08:00+00' + g * interval '1 minute') AS x (t)
UNION ALL
SELECT CASE WHEN g = 0 THEN '00000000-0000-0000-0000-0000000000c1'::uuid ELSE gen_random_uuid() END,
       gen_random_uuid(), gen_random_uuid(), 'Audio', 'Answered', t, t,
       CASE WHEN g = 0 THEN timestamptz '2100-01-01 10:30+00' ELSE timestamptz '2100-01-01 11:00+00' + g * interval '1 minute' END
  FROM generate_series(0, 19) AS g, LATERAL (SELECT timestamptz '2100-01-01 07:00+00' + g * interval '1 minute') AS x (t);

-- Batch 10: a drain, one second apart, until a cycle comes up short (it also sweeps below).
CREATE TEMP TABLE c1 AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 10, as_of => '2100-01-01 12:00+00');
SELECT is((SELECT talking_since FROM messenger.call_reaper_claim_floor WHERE phase = 'stale_answered'),
          '2100-01-01 10:30+00'::timestamptz,
          'a full stale-answered lane that walked past 20 talkers stores a floor with the earliest updated_at among them');
CREATE TEMP TABLE c2 AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 10, as_of => '2100-01-01 12:00:01+00');
CREATE TEMP TABLE c3 AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 10, as_of => '2100-01-01 12:00:02+00');
CREATE TEMP TABLE c4 AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 10, as_of => '2100-01-01 12:00:03+00');
SELECT is((SELECT ARRAY[c1.failed_count, c2.failed_count, c3.failed_count, c4.failed_count] FROM c1, c2, c3, c4),
          ARRAY[10, 10, 10, 0], 'the drain fails the 30 stale calls, 10 a cycle, and none of the talkers');
SELECT is((SELECT ARRAY[swept::text, talking_since::text, as_of::text] FROM messenger.call_reaper_claim_floor WHERE phase = 'stale_answered'),
          ARRAY['true', '2100-01-01 10:30:00+00', '2100-01-01 12:00:03+00'],
          'the drain''s end sweeps below the floor and keeps it, talking_since unchanged');

CREATE TEMP TABLE idle AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 10, as_of => '2100-01-01 12:00:04+00');
SELECT is((SELECT as_of FROM messenger.call_reaper_claim_floor WHERE phase = 'stale_answered'),
          '2100-01-01 12:00:03+00'::timestamptz, 'an idle cycle over the trusted floor leaves it unwritten');

-- Trust ends at talking_since - fresh: cutoff 10:29:45 at as_of 12:29:45.
SELECT is(messenger._reap_floor_trusted(
              ROW('stale_answered', gen_random_uuid(), '2100-01-01 12:29:44.999999+00', '2 hours', 10, '15 seconds',
                  '1 minute', '1 hour', 63, NULL, 'messenger.call_sessions', 'messenger.realtime_outbox')::messenger.call_reaper_phase_run,
              (SELECT f FROM messenger.call_reaper_claim_floor AS f WHERE f.phase = 'stale_answered'),
              (SELECT f.vacuums FROM messenger.call_reaper_claim_floor AS f WHERE f.phase = 'stale_answered')),
          true, '(e) the floor is trusted while the cutoff is before talking_since less the fresh window');
SELECT is(messenger._reap_floor_trusted(
              ROW('stale_answered', gen_random_uuid(), '2100-01-01 12:29:45+00', '2 hours', 10, '15 seconds',
                  '1 minute', '1 hour', 63, NULL, 'messenger.call_sessions', 'messenger.realtime_outbox')::messenger.call_reaper_phase_run,
              (SELECT f FROM messenger.call_reaper_claim_floor AS f WHERE f.phase = 'stale_answered'),
              (SELECT f.vacuums FROM messenger.call_reaper_claim_floor AS f WHERE f.phase = 'stale_answered')),
          false, '(e) and no longer once the cutoff reaches it');
-- A floor an older release stored for stale_answered has no talking_since: never trusted.
SELECT is(messenger._reap_floor_trusted(
              ROW('stale_answered', gen_random_uuid(), '2100-01-01 12:00:05+00', '2 hours', 10, '15 seconds',
                  '1 minute', '1 hour', 63, NULL, 'messenger.call_sessions', 'messenger.realtime_outbox')::messenger.call_reaper_phase_run,
              (SELECT ROW(f.phase, f.due_key, f.call_id, f.reset_at, f.as_of, f.run_id, f.anchor_started_at, f.vacuums,
                          f.swept, f.passed, NULL, f.calls)::messenger.call_reaper_claim_floor
                 FROM messenger.call_reaper_claim_floor AS f WHERE f.phase = 'stale_answered'),
              (SELECT f.vacuums FROM messenger.call_reaper_claim_floor AS f WHERE f.phase = 'stale_answered')),
          false, '(e) a stale-answered floor without talking_since is never trusted');

-- c1 stops progressing: due at 12:30 exactly, below the floor.
CREATE TEMP TABLE before_due AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 10, as_of => '2100-01-01 12:29:59.999999+00');
SELECT is((SELECT status FROM messenger.call_sessions WHERE call_id = '00000000-0000-0000-0000-0000000000c1'),
          'Answered', 'the talker below the floor is not failed a microsecond before it is due');
CREATE TEMP TABLE at_due AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 10, as_of => '2100-01-01 12:30+00');
SELECT is((SELECT status FROM messenger.call_sessions WHERE call_id = '00000000-0000-0000-0000-0000000000c1'),
          'Failed', 'the talker below the floor that stopped progressing is failed by the first cycle it is due in');

-- A drain with no talkers: talking_since is the storing cycle's as_of. With retries allowed to
-- wait 4 h (check (b) then hides for up to 4 h), a call answered 10 s before the drain started
-- and committed after its sweep, started below the floor, is failed by the first cycle it is due in.
DELETE FROM messenger.call_sessions WHERE status = 'Answered';
DELETE FROM messenger.call_reaper_claim_floor;
UPDATE messenger.call_reaper_settings SET poison_backoff_max = '4 hours';
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Video', 'Answered', t, t, t + interval '30 minutes'
  FROM generate_series(0, 29) AS g, LATERAL (SELECT timestamptz '2100-01-01 09:00+00' + g * interval '1 minute') AS x (t);
CREATE TEMP TABLE d1 AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 10, as_of => '2100-01-01 14:00+00');
CREATE TEMP TABLE d2 AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 10, as_of => '2100-01-01 14:00:01+00');
CREATE TEMP TABLE d3 AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 10, as_of => '2100-01-01 14:00:02+00');
CREATE TEMP TABLE d4 AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 10, as_of => '2100-01-01 14:00:03+00');
SELECT is((SELECT ARRAY[swept::text, talking_since::text] FROM messenger.call_reaper_claim_floor WHERE phase = 'stale_answered'),
          ARRAY['true', '2100-01-01 14:00:00+00'],
          'a drain past no talker keeps a swept floor whose talking_since is its first cycle''s as_of');
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
VALUES ('00000000-0000-0000-0000-0000000000d1', gen_random_uuid(), gen_random_uuid(), 'Audio', 'Answered',
        '2100-01-01 08:00+00', '2100-01-01 13:59:50+00', '2100-01-01 13:59:50+00');
CREATE TEMP TABLE late_before AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 10, as_of => '2100-01-01 15:59:49.999999+00');
SELECT is((SELECT status FROM messenger.call_sessions WHERE call_id = '00000000-0000-0000-0000-0000000000d1'),
          'Answered', 'the call answered late below the floor is not failed before it is due');
CREATE TEMP TABLE late_due AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 10, as_of => '2100-01-01 15:59:50+00');
SELECT is((SELECT status FROM messenger.call_sessions WHERE call_id = '00000000-0000-0000-0000-0000000000d1'),
          'Failed', 'the call answered late below the floor is failed by the first cycle it is due in');

-- A quarantined call that progressed, released by the retry lane below the floor (no longer
-- due), resets the floor through the quarantine's trigger; the same cycle must not write it
-- back. Still 4 h retries. 16 quarantined calls started 07:00-07:15 (the lanes step over them
-- uncounted), all due but f1, which progressed at 11:30 and is retried at 12:00:10. One cycle
-- that fails the 30 stale calls above them leaves a swept floor past them (talking_since
-- 12:00). At 12:00:10 the retry lane releases f1, and the backlog lane claims a call committed
-- since (f2) and walks a new talker (f3), which moves the floor. f1 stops progressing: due at
-- 13:30, while a floor written back would still be trusted (talking_since 12:00, reset 12:00).
DELETE FROM messenger.call_sessions WHERE status = 'Answered';
DELETE FROM messenger.call_reaper_claim_floor;
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
SELECT CASE WHEN g = 0 THEN '00000000-0000-0000-0000-0000000000f1'::uuid ELSE gen_random_uuid() END,
       gen_random_uuid(), gen_random_uuid(), 'Audio', 'Answered', t, t,
       CASE WHEN g = 0 THEN timestamptz '2100-01-02 11:30+00' ELSE timestamptz '2100-01-02 09:00+00' END
  FROM generate_series(0, 15) AS g, LATERAL (SELECT timestamptz '2100-01-02 07:00+00' + g * interval '1 minute') AS x (t)
UNION ALL
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Video', 'Answered', t, t, t + interval '30 minutes'
  FROM generate_series(0, 29) AS g, LATERAL (SELECT timestamptz '2100-01-02 08:00+00' + g * interval '1 minute') AS x (t);
INSERT INTO messenger.call_reaper_quarantine
       (call_id, phase, attempts, first_failed_at, last_failed_at, next_attempt_at, last_sqlstate, last_message, last_run_id)
SELECT s.call_id, 'stale_answered', 1, '2100-01-02 11:00+00', '2100-01-02 11:00+00',
       CASE WHEN s.call_id = '00000000-0000-0000-0000-0000000000f1' THEN timestamptz '2100-01-02 12:00:10+00'
            ELSE timestamptz '2100-01-03 00:00+00' END,
       'P0001', 'poison for the test', gen_random_uuid()
  FROM messenger.call_sessions AS s
 WHERE s.status = 'Answered' AND s.started_at < '2100-01-02 08:00+00';
CREATE TEMP TABLE q1 AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 40, as_of => '2100-01-02 12:00+00');
SELECT is((SELECT ARRAY[swept::text, talking_since::text] FROM messenger.call_reaper_claim_floor WHERE phase = 'stale_answered'),
          ARRAY['true', '2100-01-02 12:00:00+00'],
          'a cycle over 16 quarantined calls keeps a swept floor past them; the quarantined talker is not counted');
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
VALUES ('00000000-0000-0000-0000-0000000000f2', gen_random_uuid(), gen_random_uuid(), 'Audio', 'Answered',
        '2100-01-02 09:00+00', '2100-01-02 09:00+00', '2100-01-02 10:00:05+00'),
       ('00000000-0000-0000-0000-0000000000f3', gen_random_uuid(), gen_random_uuid(), 'Audio', 'Answered',
        '2100-01-02 09:10+00', '2100-01-02 09:10+00', '2100-01-02 12:00:05+00');
CREATE TEMP TABLE release AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 10, as_of => '2100-01-02 12:00:10+00');
SELECT is((SELECT ARRAY[r.failed_count::text, (SELECT count(*) FROM messenger.call_reaper_quarantine
                                                WHERE call_id = '00000000-0000-0000-0000-0000000000f1')::text,
                        (SELECT count(*) FROM messenger.call_reaper_claim_floor WHERE phase = 'stale_answered')::text]
             FROM release AS r),
          ARRAY['1', '0', '0'],
          'a cycle that releases a quarantined call below the floor and claims above it leaves no floor');
CREATE TEMP TABLE released_due AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 10, as_of => '2100-01-02 13:30+00');
SELECT is((SELECT status FROM messenger.call_sessions WHERE call_id = '00000000-0000-0000-0000-0000000000f1'),
          'Failed', 'the released call that stopped progressing is failed by the first cycle it is due in');

SELECT * FROM finish();
ROLLBACK;
