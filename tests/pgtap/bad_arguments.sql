-- Bad arguments raise SQLSTATE 22023 naming the argument, before anything changes; NULL means
-- "the configured value".
BEGIN;
SELECT plan(14);

INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
VALUES (gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing',
        '2100-01-01 00:00+00', NULL, '2100-01-01 00:00+00');
CREATE TEMP TABLE before_calls AS SELECT * FROM messenger.call_sessions;
CREATE TEMP TABLE runs_before AS SELECT count(*) AS n FROM messenger.call_reaper_runs;

SELECT throws_like($$SELECT messenger.reap_call_timeouts(batch_size => 0, as_of => '2100-01-02')$$,
    '%batch_size%', 'batch_size 0 is refused, naming batch_size');
SELECT throws_ok($$SELECT messenger.reap_call_timeouts(batch_size => 0, as_of => '2100-01-02')$$,
    '22023', NULL, 'batch_size 0 raises 22023');
SELECT throws_ok($$SELECT messenger.reap_call_timeouts(batch_size => -1, as_of => '2100-01-02')$$,
    '22023', NULL, 'a negative batch_size raises 22023');
SELECT throws_ok($$SELECT messenger.reap_call_timeouts(batch_size => 10001, as_of => '2100-01-02')$$,
    '22023', NULL, 'batch_size above 10000 raises 22023');
SELECT lives_ok($$SELECT messenger.reap_call_timeouts(batch_size => 10000, as_of => '2000-01-01')$$,
    'batch_size 10000 is accepted');
SELECT throws_like($$SELECT messenger.reap_call_timeouts(ring_timeout => '0 seconds', as_of => '2100-01-02')$$,
    '%ring_timeout%', 'a zero ring_timeout is refused, naming ring_timeout');
SELECT throws_ok($$SELECT messenger.reap_call_timeouts(ring_timeout => '-45 seconds', as_of => '2100-01-02')$$,
    '22023', NULL, 'a negative ring_timeout raises 22023');
SELECT throws_ok($$SELECT messenger.reap_call_timeouts(ring_timeout => '1 day 1 second', as_of => '2100-01-02')$$,
    '22023', NULL, 'a ring_timeout above one day raises 22023');
SELECT throws_like($$SELECT messenger.reap_call_timeouts(stale_timeout => '0 seconds', as_of => '2100-01-02')$$,
    '%stale_timeout%', 'a zero stale_timeout is refused, naming stale_timeout');
SELECT throws_ok($$SELECT messenger.reap_call_timeouts(stale_timeout => '1 day -25 hours', as_of => '2100-01-02')$$,
    '22023', NULL, 'a stale_timeout that sums below zero raises 22023');
SELECT throws_like($$SELECT messenger.reap_call_timeouts(as_of => 'infinity')$$,
    '%as_of%', 'an infinite as_of is refused, naming as_of');
SELECT throws_ok($$SELECT messenger.reap_call_timeouts(as_of => '-infinity')$$,
    '22023', NULL, 'a minus-infinite as_of raises 22023');

SELECT set_eq('SELECT * FROM messenger.call_sessions', 'SELECT * FROM before_calls',
              'refused arguments change no call');
SELECT is((SELECT count(*) FROM messenger.call_reaper_runs), (SELECT n + 1 FROM runs_before),
          'refused arguments record no run (only the one accepted cycle is in the ledger)');

SELECT * FROM finish();
ROLLBACK;
