-- Options are validated when set (SQLSTATE 22023, never stored) and omitted arguments take the
-- configured values.
BEGIN;
SELECT plan(11);

SELECT results_eq(
    'SELECT batch_size, ring_timeout, stale_timeout, polling_interval, lock_ttl, wake_at_deadline FROM messenger.call_reaper_settings',
    $$VALUES (200, '45 seconds'::interval, '2 hours'::interval, '15 seconds'::interval, '1 minute'::interval, true)$$,
    'the defaults are those of CallTimeoutReaperOptions, and the job wakes at deadlines between ticks');
SELECT throws_ok('UPDATE messenger.call_reaper_settings SET batch_size = 0', '22023', NULL,
    'a batch_size of 0 cannot be stored');
SELECT throws_ok($$UPDATE messenger.call_reaper_settings SET ring_timeout = '-1 second'$$, '22023', NULL,
    'a negative ring_timeout cannot be stored');
SELECT throws_ok($$UPDATE messenger.call_reaper_settings SET lock_ttl = '0'$$, '22023', NULL,
    'a zero lock_ttl cannot be stored');
SELECT throws_ok($$UPDATE messenger.call_reaper_settings SET batch_size = 500, stale_timeout = '0'$$, '22023', NULL,
    'one bad option refuses the whole update');
SELECT is((SELECT batch_size FROM messenger.call_reaper_settings), 200,
          'a refused update is not half-applied');
SELECT throws_ok('DELETE FROM messenger.call_reaper_settings', '55000', NULL,
    'the settings row cannot be deleted');

-- A NULL is a bad setting like any other: 22023 naming the column, before NOT NULL's 23502.
CREATE FUNCTION pg_temp.null_refusal(p_column name) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('UPDATE messenger.call_reaper_settings SET %I = NULL', p_column);
    RETURN 'stored';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ' ' || SQLERRM;
END
$$;
SELECT is(ARRAY(SELECT a.attname || ': ' || pg_temp.null_refusal(a.attname)
                  FROM pg_attribute AS a
                 WHERE a.attrelid = 'messenger.call_reaper_settings'::regclass AND a.attnum > 0
                   AND NOT a.attisdropped
                   AND pg_temp.null_refusal(a.attname) <> '22023 ' || a.attname || ' must not be NULL'
                 ORDER BY a.attnum),
          '{}'::text[], 'every setting set to NULL is refused with 22023 naming it');
SELECT throws_ok($$UPDATE messenger.call_reaper_settings SET batch_size = 500, retention = NULL$$, '22023',
    'retention must not be NULL', 'a NULL beside a good value refuses the whole update, naming the NULL');

-- Configured values are what NULL arguments mean.
UPDATE messenger.call_reaper_settings SET batch_size = 1, ring_timeout = '10 seconds';
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing',
       '2100-01-01 00:00+00', NULL, '2100-01-01 00:00+00'
  FROM generate_series(1, 2);
SELECT is((SELECT missed_count FROM messenger.reap_call_timeouts(as_of => '2100-01-01 00:00:10+00')), 1,
          'an omitted batch_size and ring_timeout take the configured values');
SELECT is((SELECT missed_count FROM messenger.reap_call_timeouts(batch_size => 5, as_of => '2100-01-01 00:00:10+00')), 1,
          'an explicit argument overrides the configured value for that call only');

SELECT * FROM finish();
ROLLBACK;
