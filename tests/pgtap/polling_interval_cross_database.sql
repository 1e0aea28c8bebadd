-- Where pg_cron keeps the reaper's job in another database (cron.schedule_in_database), pg_cron
-- 1.5+ runs it on a schedule of its own that this database cannot reach: a polling_interval
-- change is refused with 55000 and stores nothing; on pg_cron 1.4 the job's minute CALL re-reads
-- the setting, so the change is stored. The record the guard goes by (messenger.call_reaper_cron_jobs)
-- is written here as such a deploy writes it; tests/crossdb runs the real thing.
BEGIN;
SELECT plan(4);

DELETE FROM messenger.call_reaper_cron_jobs WHERE kind = 'reaper';
INSERT INTO messenger.call_reaper_cron_jobs (kind, jobname, cron_database, schedule, cron_version)
VALUES ('reaper', 'messenger-call-timeout-reaper', 'elsewhere', '15 seconds', '1.6.7');

SELECT throws_ok($$UPDATE messenger.call_reaper_settings SET polling_interval = '20 seconds'$$, '55000', NULL,
    'on pg_cron 1.5+ a job kept in another database cannot be rescheduled from here: refused');
SELECT is((SELECT polling_interval FROM messenger.call_reaper_settings), interval '15 seconds',
    'the refused interval is not stored');
SELECT lives_ok($$UPDATE messenger.call_reaper_settings SET batch_size = 300$$,
    'any other option still changes');

UPDATE messenger.call_reaper_cron_jobs SET schedule = '* * * * *', cron_version = '1.4-1' WHERE kind = 'reaper';
SELECT lives_ok($$UPDATE messenger.call_reaper_settings SET polling_interval = '20 seconds'$$,
    'on pg_cron 1.4 the job re-reads the interval at every minute''s CALL: the change is stored');

SELECT * FROM finish();
ROLLBACK;
