-- messenger.call_reaper_next_deadline(after_as_of): the earliest deadline (started_at +
-- ring_timeout) of a Ringing call that a cycle run at after_as_of left ringing, what the
-- scheduled job sleeps to between its ticks. The boundary is the cycle's own: a cycle at exactly
-- the returned deadline closes that call, one a microsecond earlier does not. Calls already due
-- at after_as_of (left by a cycle: row-locked, quarantined, a full batch) are not returned;
-- Answered calls never are. One probe of ix_call_due, nothing written.
BEGIN;
SELECT plan(11);

UPDATE messenger.call_reaper_settings SET ring_timeout = '45 seconds';
SELECT is(messenger.call_reaper_next_deadline(NULL), NULL::timestamptz, 'no Ringing call: NULL');

-- Ring timeout 45 s.
INSERT INTO messenger.call_sessions (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
VALUES ('00000000-0000-0000-0000-00000000d101', gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing',
        '2100-01-01 00:00:10+00', NULL, '2100-01-01 00:00:10+00'),
       ('00000000-0000-0000-0000-00000000d102', gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing',
        '2100-01-01 00:00:20+00', NULL, '2100-01-01 00:00:20+00'),
       ('00000000-0000-0000-0000-00000000d103', gen_random_uuid(), gen_random_uuid(), 'Audio', 'Answered',
        '2100-01-01 00:00:05+00', '2100-01-01 00:00:06+00', '2100-01-01 00:00:06+00');

SELECT is(messenger.call_reaper_next_deadline(NULL), '2100-01-01 00:00:55+00'::timestamptz,
          'NULL: the earliest deadline of any Ringing call (an Answered call that rang earlier is not ringing)');
SELECT is(messenger.call_reaper_next_deadline('2100-01-01 00:00:54.999999+00'), '2100-01-01 00:00:55+00'::timestamptz,
          'after a cycle a microsecond before the deadline: that deadline');
SELECT is(messenger.call_reaper_next_deadline('2100-01-01 00:00:55+00'), '2100-01-01 00:01:05+00'::timestamptz,
          'after a cycle at exactly the deadline (which closes that call): the next call''s');
SELECT is(messenger.call_reaper_next_deadline('2100-01-01 00:01:05+00'), NULL::timestamptz,
          'after a cycle past every deadline: NULL, even though both calls still ring (left by it)');

-- The boundary agrees with the cycle's: at the returned deadline the call closes, a microsecond
-- earlier it does not.
UPDATE messenger.call_reaper_settings SET allow_future_as_of = true;
SELECT is((SELECT missed_count FROM messenger.reap_call_timeouts(as_of => '2100-01-01 00:00:54.999999+00')), 0,
          'a cycle a microsecond before the deadline closes nothing');
SELECT is((SELECT missed_count FROM messenger.reap_call_timeouts(
               as_of => messenger.call_reaper_next_deadline('2100-01-01 00:00:54.999999+00'))), 1,
          'a cycle at the returned deadline closes the call');
SELECT is(messenger.call_reaper_next_deadline(NULL), '2100-01-01 00:01:05+00'::timestamptz,
          'the closed call is no longer the next deadline');

-- A settings change is read at each call: a shorter ring_timeout moves the deadline.
UPDATE messenger.call_reaper_settings SET ring_timeout = '30 seconds';
SELECT is(messenger.call_reaper_next_deadline(NULL), '2100-01-01 00:00:50+00'::timestamptz,
          'ring_timeout 30 s: the deadline is started_at + 30 s');

-- The probe is one index scan of ix_call_due's Ringing range, however many calls ring.
INSERT INTO messenger.call_sessions (call_id, caller_user_id, callee_user_id, media_type, status, started_at, updated_at)
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing',
       '2100-01-01 00:00:21+00'::timestamptz + g * interval '1 millisecond', '2100-01-01 00:00:21+00'
  FROM generate_series(1, 5000) AS g;
ANALYZE messenger.call_sessions;
CREATE TEMP TABLE reads (n integer, seq bigint, scans bigint, fetched bigint);
INSERT INTO reads
SELECT 0, t.seq_scan, t.idx_scan, t.idx_tup_fetch
  FROM pg_catalog.pg_stat_xact_user_tables AS t WHERE t.relid = 'messenger.call_sessions'::regclass;
SELECT is(messenger.call_reaper_next_deadline('2100-01-01 00:00:51.0005+00'), '2100-01-01 00:00:51.001+00'::timestamptz,
          'among 5,000 ringing calls, the first not due at the given as_of');
INSERT INTO reads
SELECT 1, t.seq_scan, t.idx_scan, t.idx_tup_fetch
  FROM pg_catalog.pg_stat_xact_user_tables AS t WHERE t.relid = 'messenger.call_sessions'::regclass;
SELECT is((SELECT ARRAY[a.seq - b.seq, a.scans - b.scans, least(a.fetched - b.fetched, 2)]
             FROM reads AS a, reads AS b WHERE a.n = 1 AND b.n = 0), ARRAY[0, 1, 1]::bigint[],
          'the probe is one index scan that fetches one row, no table scan');

SELECT * FROM finish();
ROLLBACK;
