-- as_of cannot reach into the future in production: beyond 5 s of clock skew it is refused with
-- 22023 and nothing changes, unless the cluster opts in with settings.allow_future_as_of (what
-- make test does), a setting neither the job role nor the monitor role may change.
BEGIN;
SELECT plan(10);
-- Who may run it: tests/pgtap/privileges.sql, which holds every grant (not repeated here).

UPDATE messenger.call_reaper_settings SET allow_future_as_of = false;
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
VALUES ('00000000-0000-0000-0000-0000000000f1', gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing',
        now(), NULL, now());
CREATE TEMP TABLE runs_before AS SELECT count(*) AS n FROM messenger.call_reaper_runs;

-- Issue 10, reproduction 4.
SELECT throws_ok($$SELECT messenger.reap_call_timeouts(as_of => '9999-12-31')$$, '22023', NULL,
    'as_of 9999-12-31 is refused');
SELECT throws_like($$SELECT messenger.reap_call_timeouts(as_of => '9999-12-31')$$, '%as_of%',
    'the refusal names as_of');
SELECT throws_ok(format('SELECT messenger.reap_call_timeouts(as_of => %L)', clock_timestamp() + interval '1 minute'),
    '22023', NULL, 'as_of one minute ahead is refused');
SELECT throws_ok(format('SELECT * FROM messenger.preview_call_timeouts(as_of => %L)', clock_timestamp() + interval '1 hour'),
    '22023', NULL, 'the preview refuses a future as_of too');
SELECT is((SELECT status FROM messenger.call_sessions WHERE call_id = '00000000-0000-0000-0000-0000000000f1'),
          'Ringing', 'the live call is untouched');
SELECT is((SELECT count(*) FROM messenger.call_reaper_runs), (SELECT n FROM runs_before),
          'refused cycles record no run');

SELECT lives_ok(format('SELECT messenger.reap_call_timeouts(as_of => %L)', clock_timestamp() + interval '2 seconds'),
    'as_of within 5 s of clock skew is accepted');
SELECT lives_ok($$SELECT messenger.reap_call_timeouts(as_of => now() - interval '1 hour')$$,
    'a past as_of is accepted (a DBA replaying a window)');

SET LOCAL messenger.call_reaper_allow_future_as_of = on;
SELECT throws_ok($$SELECT messenger.reap_call_timeouts(as_of => '9999-12-31')$$, '22023', NULL,
    'a session GUC cannot lift the bound');
RESET messenger.call_reaper_allow_future_as_of;

UPDATE messenger.call_reaper_settings SET allow_future_as_of = true;
SELECT is((SELECT missed_count FROM messenger.reap_call_timeouts(as_of => now() + interval '1 hour')), 1,
          'a cluster that opts in may pass a future as_of (tests do, instead of sleeping)');

SELECT * FROM finish();
ROLLBACK;
