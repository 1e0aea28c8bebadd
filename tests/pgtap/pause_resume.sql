-- Pausing and resuming are SQL verbs on the reaper's own state (settings.paused), which the
-- job's procedure reads; no pg_cron right is involved. call_reaper_status() shows the flag;
-- what it says of the pg_cron job is in pause_resume_cron.sql (needs pg_cron), its lock and
-- last-run columns in call_reaper_status.sql. This file runs on every version.
BEGIN;
SELECT plan(12);
-- Who may run it: tests/pgtap/privileges.sql, which holds every grant (not repeated here).

SELECT has_function('messenger', 'pause_call_reaper', ARRAY[]::text[], 'messenger.pause_call_reaper() exists');
SELECT has_function('messenger', 'resume_call_reaper', ARRAY[]::text[], 'messenger.resume_call_reaper() exists');
SELECT has_function('messenger', 'call_reaper_status', ARRAY[]::text[], 'messenger.call_reaper_status() exists');

-- The test harness runs pgTAP with the reaper paused (scripts/reaper-job pause).
UPDATE messenger.call_reaper_settings SET paused = false;
SELECT is((SELECT paused FROM messenger.call_reaper_status()), false, 'status shows a running reaper');
SELECT is(messenger.pause_call_reaper(), true, 'pause pauses a running reaper and says so');
SELECT is((SELECT paused FROM messenger.call_reaper_settings), true, 'the flag is in the reaper''s settings');
SELECT is(messenger.pause_call_reaper(), false, 'pausing again changes nothing and says so');
SELECT is((SELECT paused FROM messenger.call_reaper_status()), true, 'status shows the pause');
SELECT is(messenger.resume_call_reaper(), true, 'resume resumes a paused reaper and says so');
SELECT is(messenger.resume_call_reaper(), false, 'resuming again changes nothing and says so');

-- A paused reaper's procedure returns before its first cycle: no run is recorded.
SELECT messenger.pause_call_reaper();
CREATE TEMP TABLE runs_before AS SELECT count(*) AS n FROM messenger.call_reaper_runs;
-- It returns at once rather than ticking to the minute's end (pg_cron 1.4): a CALL that waited
-- for a tick would be cancelled (57014) by this timeout and fail the file.
SET LOCAL statement_timeout = '2s';
CALL messenger.run_call_reaper_ticks();
RESET statement_timeout;
SELECT is((SELECT count(*) FROM messenger.call_reaper_runs), (SELECT n FROM runs_before),
          'the job''s procedure runs no cycle while paused');
SELECT is((SELECT s.polling_interval FROM messenger.call_reaper_status() AS s), interval '15 seconds',
          'status shows the polling interval');

SELECT * FROM finish();
ROLLBACK;
