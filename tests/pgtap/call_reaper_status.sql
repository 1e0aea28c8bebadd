-- messenger.call_reaper_status() in one session, on every version: the lock holder and since
-- when, the last run and its result, the deadline wake. Columns are read by name (the function
-- may gain some).
-- A job CALL in flight, held by another session, is in tests/python/test_dba_tools.py.
BEGIN;
SELECT plan(7);

SELECT is((SELECT ROW(s.lock_holder_pid, s.lock_held_since) FROM messenger.call_reaper_status() AS s)::text,
          ROW(NULL::integer, NULL::timestamptz)::text,
          'nobody holds the reaper''s lock: no holder, no since');

CREATE TEMP TABLE r AS SELECT * FROM messenger.reap_call_timeouts(as_of => '2100-01-01 00:00+00');
SELECT is((SELECT ROW(s.last_run_at, s.last_result) FROM messenger.call_reaper_status() AS s)::text,
          (SELECT ROW(o.started_at, o.result) FROM messenger.call_reaper_runs AS o
            WHERE o.run_id = (SELECT run_id FROM r))::text,
          'the last run is the cycle just run, with its start and result');
SELECT is((SELECT last_result FROM messenger.call_reaper_status()), 'completed',
          'its result is completed');

-- The deadline wake: a Ringing call the last run (as_of 2100-01-01 00:00) left ringing is the
-- next deadline; no job CALL sleeps in this session's database transaction.
INSERT INTO messenger.call_sessions (call_id, caller_user_id, callee_user_id, media_type, status, started_at, updated_at)
VALUES (gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing',
        '2100-01-01 00:00:10+00', '2100-01-01 00:00:10+00');
SELECT is((SELECT ROW(s.wake_at_deadline, s.next_deadline) FROM messenger.call_reaper_status() AS s)::text,
          ROW(true, '2100-01-01 00:00:10+00'::timestamptz
                    + (SELECT ring_timeout FROM messenger.call_reaper_settings))::text,
          'the wake is on, and the next deadline is that of the call the last run left ringing');
SELECT is((SELECT sleeping_to_deadline FROM messenger.call_reaper_status()), false,
          'no job CALL is sleeping to it (none runs here in this transaction''s view)');

-- This transaction takes the lock a cycle takes: status names this backend, since it began.
SELECT pg_advisory_xact_lock(messenger.call_reaper_lock_key());
SELECT is((SELECT lock_holder_pid FROM messenger.call_reaper_status()), pg_backend_pid(),
          'the backend holding the reaper''s lock is named');
SELECT is((SELECT lock_held_since FROM messenger.call_reaper_status()), now(),
          'it has held it since its transaction began');

SELECT * FROM finish();
ROLLBACK;
