-- The lock warden's job by pg_cron version: on 1.5+ one check per run, scheduled every second (a
-- job slot for milliseconds); on 1.4, which has nothing shorter than a minute, a CALL a minute
-- that loops the check once a second. Proved here by what a CALL in a transaction block does:
-- the single check returns, the minute loop fails at its first COMMIT (2D000).
BEGIN;
SELECT plan(3);

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

SELECT * FROM finish();
ROLLBACK;
