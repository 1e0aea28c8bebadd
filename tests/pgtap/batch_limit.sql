-- batch_size bounds each phase separately, oldest started first (phase 2 too: by started_at,
-- ix_call_due's key, not by updated_at; docs/design.md); the backlog drains over cycles.
BEGIN;
SELECT plan(7);

-- Five overdue Ringing calls (b01 oldest) and four stale Answered ones (a04 oldest, a01 stalest), inserted
-- out of order so the test does not pass by insertion order.
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
SELECT ('00000000-0000-0000-0000-0000000b00' || lpad(g::text, 2, '0'))::uuid, gen_random_uuid(), gen_random_uuid(),
       'Audio', 'Ringing', '2100-01-01 00:00+00'::timestamptz + g * interval '1 second', NULL,
       '2100-01-01 00:00+00'::timestamptz + g * interval '1 second'
  FROM unnest(ARRAY[3, 1, 5, 2, 4]) AS g
UNION ALL
-- started_at runs opposite to updated_at: phase 2 is ordered by started_at, not its due time.
SELECT ('00000000-0000-0000-0000-0000000a00' || lpad(g::text, 2, '0'))::uuid, gen_random_uuid(), gen_random_uuid(),
       'Video', 'Answered', '2100-01-01 00:00+00'::timestamptz - g * interval '1 minute',
       '2100-01-01 00:00+00'::timestamptz - g * interval '1 minute' + interval '5 seconds',
       '2100-01-01 00:00+00'::timestamptz + g * interval '1 second'
  FROM unnest(ARRAY[4, 2, 1, 3]) AS g;

CREATE TEMP TABLE r1 AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 2, as_of => '2100-01-01 06:00+00');
SELECT is((SELECT ARRAY[missed_count, failed_count] FROM r1), ARRAY[2, 2],
          'batch_size 2 closes two calls in each phase');
SELECT is(ARRAY(SELECT call_id::text FROM messenger.call_sessions
                 WHERE status = 'Missed' AND call_id::text LIKE '00000000-0000-0000-0000-0000000b00%' ORDER BY call_id),
          ARRAY['00000000-0000-0000-0000-0000000b0001', '00000000-0000-0000-0000-0000000b0002'],
          'phase 1 closes the calls that started first');
SELECT is(ARRAY(SELECT call_id::text FROM messenger.call_sessions
                 WHERE status = 'Failed' AND call_id::text LIKE '00000000-0000-0000-0000-0000000a00%' ORDER BY call_id),
          ARRAY['00000000-0000-0000-0000-0000000a0003', '00000000-0000-0000-0000-0000000a0004'],
          'phase 2 closes the calls that started first, whatever their last progress');

CREATE TEMP TABLE r2 AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 2, as_of => '2100-01-01 06:00:15+00');
CREATE TEMP TABLE r3 AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 2, as_of => '2100-01-01 06:00:30+00');
SELECT is((SELECT ARRAY[missed_count, failed_count] FROM r2), ARRAY[2, 2], 'the second cycle takes the next two of each');
SELECT is((SELECT ARRAY[missed_count, failed_count] FROM r3), ARRAY[1, 0], 'the third cycle drains what is left');
SELECT is((SELECT count(*)::integer FROM messenger.call_sessions
            WHERE status IN ('Ringing', 'Answered') AND call_id::text LIKE '00000000-0000-0000-0000-0000000_00%'),
          0, 'the backlog is drained over cycles');
SELECT is((SELECT count(*)::integer FROM messenger.realtime_outbox o
            WHERE o.reference_id::text LIKE '00000000-0000-0000-0000-0000000_00%'), 5 + 2 * 4,
          'every closed call has its outbox rows, none more');

SELECT * FROM finish();
ROLLBACK;
