-- polling_interval must be a whole number of seconds dividing 60: the job ticks within the
-- minute on pg_cron 1.4. Anything else is refused with 22023 when set, never stored. The job's
-- schedule that follows it is in polling_interval_cron.sql (needs pg_cron).
BEGIN;
SELECT plan(7);

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
SELECT lives_ok($$UPDATE messenger.call_reaper_settings SET polling_interval = '1 minute'$$,
    'one minute is stored (one cycle per minute)');
SELECT lives_ok($$UPDATE messenger.call_reaper_settings SET polling_interval = '1 second'$$,
    'one second is stored');

SELECT * FROM finish();
ROLLBACK;
