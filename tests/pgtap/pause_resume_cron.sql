-- Pausing leaves the pg_cron job alone: pg_cron keeps launching it and its CALL returns at
-- once; call_reaper_status() shows the job and its schedule. The verbs themselves are in
-- pause_resume.sql.
-- Needs pg_cron.
BEGIN;
SELECT plan(3);

SELECT is(messenger.pause_call_reaper() OR (SELECT paused FROM messenger.call_reaper_settings), true,
          'the reaper is paused');
SELECT is((SELECT job_active FROM messenger.call_reaper_status()), true,
          'the pg_cron job itself is untouched (pg_cron keeps launching it; its CALL returns at once)');
SELECT is((SELECT s.job_scheduled AND s.schedule = (SELECT j.schedule FROM cron.job AS j
                                                     WHERE j.jobname = messenger.call_reaper_job_name('reaper'))
             FROM messenger.call_reaper_status() AS s), true,
          'status shows the job and its pg_cron schedule');

SELECT * FROM finish();
ROLLBACK;
