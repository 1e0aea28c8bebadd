-- preview_call_timeouts: the calls a cycle would close and why, with the reaper's arguments and
-- validation; it changes, and locks, nothing. Data lives in 2100 so the scheduled job never sees it.
BEGIN;
SELECT plan(15);
-- Who may run it: tests/pgtap/privileges.sql, which holds every grant (not repeated here).

SELECT function_returns('messenger', 'preview_call_timeouts',
    ARRAY['integer', 'interval', 'interval', 'timestamp with time zone'], 'setof record',
    'preview_call_timeouts(batch_size, ring_timeout, stale_timeout, as_of) returns rows');
SELECT volatility_is('messenger', 'preview_call_timeouts',
    ARRAY['integer', 'interval', 'interval', 'timestamp with time zone'], 'stable',
    'preview_call_timeouts is STABLE');

-- as_of 2100-01-01 03:00; ring 45 s -> cutoff 02:59:15; stale 2 h -> cutoff 01:00.
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
VALUES ('00000000-0000-0000-0000-00000000e001', gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing',
        '2100-01-01 02:59:10+00', NULL, '2100-01-01 02:59:10+00'),      -- overdue, rings 5 s too long
       ('00000000-0000-0000-0000-00000000e002', gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing',
        '2100-01-01 02:59:00+00', NULL, '2100-01-01 02:59:00+00'),      -- overdue, older
       ('00000000-0000-0000-0000-00000000e003', gen_random_uuid(), gen_random_uuid(), 'Video', 'Ringing',
        '2100-01-01 02:59:30+00', NULL, '2100-01-01 02:59:30+00'),      -- still in its window
       ('00000000-0000-0000-0000-00000000e004', gen_random_uuid(), gen_random_uuid(), 'Audio', 'Answered',
        '2100-01-01 00:00:00+00', '2100-01-01 00:00:05+00', '2100-01-01 00:30:00+00'),  -- stale
       ('00000000-0000-0000-0000-00000000e005', gen_random_uuid(), gen_random_uuid(), 'Audio', 'Answered',
        '2100-01-01 00:00:00+00', '2100-01-01 00:00:05+00', '2100-01-01 02:00:00+00'),  -- progressing
       ('00000000-0000-0000-0000-00000000e006', gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing',
        '2100-01-01 02:00:00+00', NULL, '2100-01-01 02:00:00+00');      -- overdue but quarantined
INSERT INTO messenger.call_reaper_quarantine
       (call_id, phase, attempts, first_failed_at, last_failed_at, next_attempt_at, last_sqlstate, last_message, last_run_id)
VALUES ('00000000-0000-0000-0000-00000000e006', 'ring_timeout', 1, '2100-01-01 02:59:00+00',
        '2100-01-01 02:59:00+00', '2100-01-01 03:01:00+00', 'P0001', 'test', gen_random_uuid());

SELECT results_eq(
    $$SELECT phase, call_id, status, new_status, end_reason, due_at, overdue
        FROM messenger.preview_call_timeouts(as_of => '2100-01-01 03:00+00')$$,
    $$VALUES ('ring_timeout', '00000000-0000-0000-0000-00000000e002'::uuid, 'Ringing', 'Missed', 'Timeout',
              '2100-01-01 02:59:45+00'::timestamptz, '15 seconds'::interval),
             ('ring_timeout', '00000000-0000-0000-0000-00000000e001'::uuid, 'Ringing', 'Missed', 'Timeout',
              '2100-01-01 02:59:55+00'::timestamptz, '5 seconds'::interval),
             ('stale_answered', '00000000-0000-0000-0000-00000000e004'::uuid, 'Answered', 'Failed', 'Error',
              '2100-01-01 02:30:00+00'::timestamptz, '30 minutes'::interval)$$,
    'the preview lists the overdue calls per phase, oldest due first, with due time and lateness');
SELECT ok((SELECT bool_and(reason IS NOT NULL AND reason <> '')
             FROM messenger.preview_call_timeouts(as_of => '2100-01-01 03:00+00')),
          'every previewed call says why it would be closed');
SELECT results_eq(
    $$SELECT call_id FROM messenger.preview_call_timeouts(batch_size => 1, as_of => '2100-01-01 03:00+00')$$,
    $$VALUES ('00000000-0000-0000-0000-00000000e001'::uuid), ('00000000-0000-0000-0000-00000000e004'::uuid)$$,
    'batch_size limits each phase as in a cycle: a call due within the last polling interval first');
SELECT is((SELECT count(*)::integer
             FROM messenger.preview_call_timeouts(as_of => '2100-01-01 03:02+00')
            WHERE call_id = '00000000-0000-0000-0000-00000000e006'),
          1, 'a quarantined call is previewed once its next attempt is due');
SELECT is((SELECT count(*)::integer
             FROM messenger.preview_call_timeouts(ring_timeout => '10 seconds', as_of => '2100-01-01 03:00+00')
            WHERE phase = 'ring_timeout'),
          3, 'arguments override the configured options, as for the reaper');
SELECT results_eq(
    $$SELECT phase, count(*)::integer FROM messenger.preview_call_timeouts(stale_timeout => '1 hour', as_of => '2100-01-01 03:00+00')
       GROUP BY phase ORDER BY phase$$,
    $$VALUES ('ring_timeout', 2), ('stale_answered', 2)$$,
    'a phase''s timeout argument moves that phase''s window only');
SELECT is(ARRAY(SELECT DISTINCT p.phase || ': ' || (v.reason LIKE '%longer than ' || p.timeout_setting || ' %')::text
                  FROM messenger.preview_call_timeouts(as_of => '2100-01-01 03:00+00') AS v
                  JOIN messenger.call_reaper_phases() AS p ON p.phase = v.phase
                 ORDER BY 1),
          ARRAY['ring_timeout: true', 'stale_answered: true'],
          'each reason names the setting that times its phase (call_reaper_phases().timeout_setting)');

SELECT throws_ok($$SELECT * FROM messenger.preview_call_timeouts(batch_size => 0)$$, '22023', NULL,
    'a bad batch_size is refused with 22023, as by the reaper');
SELECT throws_ok($$SELECT * FROM messenger.preview_call_timeouts(as_of => 'infinity')$$, '22023', NULL,
    'an infinite as_of is refused with 22023, as by the reaper');

-- Nothing changed and nothing locked: row locks would set xmax on the previewed rows, the
-- advisory lock would show in pg_locks.
SELECT is((SELECT count(*)::integer FROM messenger.call_sessions
            WHERE call_id::text LIKE '00000000-0000-0000-0000-00000000e00%' AND status IN ('Ringing', 'Answered')),
          6, 'previewing closes no call');
SELECT is((SELECT count(*)::integer FROM messenger.call_sessions
            WHERE call_id::text LIKE '00000000-0000-0000-0000-00000000e00%' AND xmax::text <> '0'),
          0, 'previewing locks no call row');
SELECT is((SELECT count(*)::integer FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()),
          0, 'previewing does not take the single-runner lock');

-- The preview is what the cycle then does.
CREATE TEMP TABLE previewed AS
SELECT call_id FROM messenger.preview_call_timeouts(as_of => '2100-01-01 03:00+00');
CREATE TEMP TABLE cycle AS SELECT * FROM messenger.reap_call_timeouts(as_of => '2100-01-01 03:00+00');
SELECT set_eq(
    $$SELECT DISTINCT r.reference_id FROM messenger.realtime_outbox AS r
       WHERE r.correlation_id = (SELECT run_id FROM cycle)$$,
    'SELECT call_id FROM previewed',
    'the next cycle closes exactly the previewed calls');

SELECT * FROM finish();
ROLLBACK;
