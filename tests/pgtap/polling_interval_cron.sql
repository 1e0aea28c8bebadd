-- The pg_cron job's schedule follows polling_interval in the transaction that changes it: a
-- native 'N seconds' schedule on pg_cron 1.5+, the minute on 1.4 (whose procedure re-reads the
-- interval). The interval's own rules are in polling_interval.sql.
-- Needs pg_cron.
BEGIN;
SELECT plan(2);

SELECT lives_ok($$UPDATE messenger.call_reaper_settings SET polling_interval = '20 seconds'$$,
    '20 seconds divides the minute and is stored');
SELECT is((SELECT schedule FROM cron.job
            WHERE jobname = messenger.call_reaper_job_name('reaper') AND username = 'messenger_call_reaper'),
          CASE WHEN string_to_array(split_part((SELECT extversion FROM pg_extension WHERE extname = 'pg_cron'), '-', 1), '.')::integer[]
                    >= ARRAY[1, 5]
               THEN '20 seconds' ELSE '* * * * *' END,
          'the job''s schedule follows polling_interval on pg_cron 1.5+ and stays a minute on 1.4');

SELECT * FROM finish();
ROLLBACK;
