-- With nothing quarantined, the healthy claims do not consult the quarantine: a cycle that
-- closes 200 + 200 calls reads only its per-phase probes' pages of call_reaper_quarantine and
-- its indexes (the anti-join runs only while the quarantine has a row). With one row in it,
-- the same claims do read it, and still never take the quarantined call. Measured through this
-- transaction's own buffer counters of the quarantine and its indexes.
BEGIN;
SELECT plan(6);

-- 300 Ringing calls overdue at as_of 2100-01-01 12:00 and 300 stale Answered ones.
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing', t, NULL, t
  FROM generate_series(1, 300) AS g, LATERAL (SELECT timestamptz '2100-01-01 11:00+00' + g * interval '1 second') AS x (t)
UNION ALL
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Video', 'Answered', t - interval '1 hour',
       t - interval '59 minutes', t
  FROM generate_series(1, 300) AS g, LATERAL (SELECT timestamptz '2100-01-01 08:00+00' + g * interval '1 second') AS x (t);
ANALYZE messenger.call_sessions;

CREATE TEMP TABLE cost (label text, blocks bigint);
CREATE FUNCTION pg_temp.snapshot(p_label text) RETURNS void LANGUAGE sql AS $$
    INSERT INTO cost
    SELECT p_label, sum(pg_stat_get_xact_blocks_fetched(c.oid))::bigint
      FROM pg_class AS c
     WHERE c.oid = 'messenger.call_reaper_quarantine'::regclass
        OR c.oid IN (SELECT i.indexrelid FROM pg_index AS i
                      WHERE i.indrelid = 'messenger.call_reaper_quarantine'::regclass)
$$;

SELECT is((SELECT count(*)::integer FROM messenger.call_reaper_quarantine), 0, 'the quarantine is empty');
SELECT pg_temp.snapshot('empty before');
CREATE TEMP TABLE cycle_empty AS
SELECT * FROM messenger.reap_call_timeouts(batch_size => 200, as_of => '2100-01-01 12:00+00');
SELECT pg_temp.snapshot('empty after');

-- One Ringing call in the quarantine, due at the next cycle (started 11:59, ring timeout 45 s)
-- but with its retry an hour ahead: only the anti-join keeps the healthy claims off it.
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
VALUES ('00000000-0000-0000-0000-00000000a001', gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing',
        '2100-01-01 11:59:00+00', NULL, '2100-01-01 11:59:00+00');
INSERT INTO messenger.call_reaper_quarantine
       (call_id, phase, attempts, first_failed_at, last_failed_at, next_attempt_at, last_sqlstate, last_message, last_run_id)
VALUES ('00000000-0000-0000-0000-00000000a001', 'ring_timeout', 1, '2100-01-01 11:59+00', '2100-01-01 11:59+00',
        '2100-01-01 13:00+00', 'P0001', 'test', gen_random_uuid());
SELECT pg_temp.snapshot('one before');
CREATE TEMP TABLE cycle_one AS
SELECT * FROM messenger.reap_call_timeouts(batch_size => 200, as_of => '2100-01-01 12:00:30+00');
SELECT pg_temp.snapshot('one after');

CREATE TEMP TABLE delta AS
SELECT (SELECT a.blocks - b.blocks FROM cost a, cost b WHERE a.label = 'empty after' AND b.label = 'empty before') AS empty_blocks,
       (SELECT a.blocks - b.blocks FROM cost a, cost b WHERE a.label = 'one after' AND b.label = 'one before') AS one_blocks;
SELECT diag(format('quarantine pages read by a 200 + 200 cycle: empty quarantine %s, one row %s',
               empty_blocks, one_blocks)) FROM delta;

SELECT is((SELECT ARRAY[missed_count, failed_count] FROM cycle_empty), ARRAY[200, 200],
          'the cycle beside an empty quarantine closes a full batch in each phase');
-- Two min() probes per phase, each an index scan of ix_call_reaper_quarantine_due: 5 pages
-- measured. Consulted, the quarantine costs pages per claim statement (24 measured with the
-- flag forced on) or, as a per-row NOT EXISTS, one primary-key probe per walked row.
SELECT cmp_ok((SELECT empty_blocks FROM delta), '<', 12::bigint,
              'with an empty quarantine the claims read no quarantine page beyond the probes');
SELECT is((SELECT ARRAY[missed_count, failed_count] FROM cycle_one), ARRAY[100, 100],
          'the cycle beside one quarantined call closes the rest of the backlog');
SELECT cmp_ok((SELECT one_blocks FROM delta), '>', (SELECT empty_blocks FROM delta),
              'with a row in the quarantine the cycle consults it');
SELECT is((SELECT status FROM messenger.call_sessions WHERE call_id = '00000000-0000-0000-0000-00000000a001'),
          'Ringing', 'the due quarantined call is not taken by the healthy claims');

SELECT * FROM finish();
ROLLBACK;
