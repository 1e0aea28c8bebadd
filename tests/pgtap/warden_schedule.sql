-- The lock warden's job by pg_cron version: on 1.5+ scheduled every second, one check per run (a
-- job slot for milliseconds); on 1.4, which has nothing shorter than a minute, every minute, a
-- CALL that loops the check once a second. The procedure goes by its job's schedule, so a job
-- still on the minute (pg_cron updated from 1.4, the reaper not yet redeployed) keeps the loop.
-- Proved by what a CALL in a transaction block does: one check returns, the loop fails at its
-- first COMMIT (2D000).
BEGIN;
SELECT plan(5);

CREATE TEMP TABLE cron_15 ON COMMIT DROP AS
SELECT string_to_array(split_part(extversion, '-', 1), '.')::integer[] >= ARRAY[1, 5] AS native_seconds
  FROM pg_extension WHERE extname = 'pg_cron';

SELECT is((SELECT schedule FROM cron.job WHERE jobname = messenger.call_reaper_job_name('warden')),
          CASE WHEN (SELECT native_seconds FROM cron_15) THEN '1 seconds' ELSE '* * * * *' END,
          'the warden job runs every second on pg_cron 1.5+, every minute on 1.4');
SELECT is((SELECT command FROM cron.job WHERE jobname = messenger.call_reaper_job_name('warden')),
          'CALL messenger.run_call_reaper_warden()', 'the warden job CALLs the warden procedure');
SELECT CASE WHEN (SELECT native_seconds FROM cron_15)
            THEN lives_ok('CALL messenger.run_call_reaper_warden()',
                          'on pg_cron 1.5+ a warden CALL is one check: it returns without a COMMIT')
            ELSE throws_ok('CALL messenger.run_call_reaper_warden()', '2D000', NULL,
                           'on pg_cron 1.4 a warden CALL loops the minute, COMMITting after each check')
       END;

-- The procedure goes by the schedule the deploy recorded (a product database whose jobs pg_cron
-- keeps in another database has no cron.job to read it from), whatever this pg_cron's version.
UPDATE messenger.call_reaper_cron_jobs SET schedule = '* * * * *' WHERE kind = 'warden';
SELECT throws_ok('CALL messenger.run_call_reaper_warden()', '2D000', NULL,
                 'with its job recorded on the minute schedule a warden CALL loops the minute, on any pg_cron version');
UPDATE messenger.call_reaper_cron_jobs SET schedule = '1 seconds' WHERE kind = 'warden';
SELECT lives_ok('CALL messenger.run_call_reaper_warden()',
                'with its job recorded every second a warden CALL is one check, on any pg_cron version');

SELECT * FROM finish();
ROLLBACK;
