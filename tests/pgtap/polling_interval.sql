-- polling_interval must be a whole number of seconds dividing 60: the job ticks within the
-- minute on pg_cron 1.4. Anything else is refused with 22023 when set, never stored.
BEGIN;
SELECT plan(8);

SELECT throws_ok($$UPDATE messenger.call_reaper_settings SET polling_interval = '7 seconds'$$, '22023', NULL,
    'an interval that does not divide the minute cannot be stored');
SELECT throws_ok($$UPDATE messenger.call_reaper_settings SET polling_interval = '1.5 seconds'$$, '22023', NULL,
    'a fractional number of seconds cannot be stored');
SELECT throws_ok($$UPDATE messenger.call_reaper_settings SET polling_interval = '2 minutes'$$, '22023', NULL,
    'an interval longer than the minute cannot be stored');
SELECT is((SELECT polling_interval FROM messenger.call_reaper_settings), '15 seconds'::interval,
          'a refused interval leaves the stored one');
SELECT lives_ok($$UPDATE messenger.call_reaper_settings SET polling_interval = '20 seconds'$$,
    '20 seconds divides the minute and is stored');
-- pg_cron 1.5+ runs the job on a native schedule that must follow; 1.4's minute job re-reads it.
SELECT is((SELECT schedule FROM cron.job
            WHERE jobname = messenger.call_reaper_job_name('reaper') AND username = 'messenger_call_reaper'),
          CASE WHEN string_to_array(split_part((SELECT extversion FROM pg_extension WHERE extname = 'pg_cron'), '-', 1), '.')::integer[]
                    >= ARRAY[1, 5]
               THEN '20 seconds' ELSE '* * * * *' END,
          'the job''s schedule follows polling_interval on pg_cron 1.5+ and stays a minute on 1.4');
SELECT lives_ok($$UPDATE messenger.call_reaper_settings SET polling_interval = '1 minute'$$,
    'one minute is stored (one cycle per minute)');
SELECT lives_ok($$UPDATE messenger.call_reaper_settings SET polling_interval = '1 second'$$,
    'one second is stored');

SELECT * FROM finish();
ROLLBACK;
