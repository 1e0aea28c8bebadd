-- Retention of the reaper role's cron.job_run_details: rows older than as_of - retention go,
-- in batches; other roles' and other databases' history stays; the deployer's hourly purge job
-- removes its own old run details too. The run ledger's retention is in purge_history.sql.
-- Needs pg_cron.
BEGIN;
SELECT plan(12);

-- retention 7 days, as_of 2000-01-08 -> cutoff 2000-01-01 00:00.
INSERT INTO cron.job_run_details (jobid, database, username, command, status, return_message, start_time, end_time)
VALUES (NULL, current_database(), 'messenger_call_reaper', 'x', 'succeeded', 'CALL', '1999-12-30 00:00+00', '1999-12-30 00:00:45+00'),
       (NULL, current_database(), 'messenger_call_reaper', 'x', 'succeeded', 'CALL', '1999-12-31 23:59+00', '1999-12-31 23:59:45+00'),
       (NULL, current_database(), 'messenger_call_reaper', 'x', 'succeeded', 'CALL', '2000-01-05 00:00+00', '2000-01-05 00:00:45+00'),
       (NULL, current_database(), 'someone_else', 'x', 'succeeded', 'SELECT', '1999-12-30 00:00+00', '1999-12-30 00:00:01+00'),
       (NULL, 'another_db', 'messenger_call_reaper', 'x', 'succeeded', 'CALL', '1999-12-30 00:00+00', '1999-12-30 00:00:45+00');

CREATE TEMP TABLE p1 AS SELECT * FROM messenger.purge_call_reaper_history(as_of => '2000-01-08 00:00+00', batch_size => 3);
SELECT is((SELECT job_run_details_purged FROM p1), 2::bigint,
          'the purge removes the reaper role''s 2 old run details of this database');
SELECT is((SELECT count(*)::integer FROM cron.job_run_details
            WHERE username = 'messenger_call_reaper' AND database = current_database()
              AND end_time < '2000-01-01 00:00+00'),
          0, 'no run detail of the reaper role older than the retention remains');
SELECT is((SELECT count(*)::integer FROM cron.job_run_details WHERE start_time = '2000-01-05 00:00+00'),
          1, 'newer run details are kept');
SELECT is((SELECT count(*)::integer FROM cron.job_run_details WHERE username = 'someone_else'),
          1, 'other roles'' job history is never touched');
SELECT is((SELECT count(*)::integer FROM cron.job_run_details WHERE database = 'another_db'),
          1, 'job history of other databases is never touched');
SELECT is((SELECT job_run_details_purged FROM messenger.purge_call_reaper_history(as_of => '2000-01-08 00:00+00')),
          0::bigint, 'purging again finds no run detail: it is idempotent');

-- The deployer's hourly job runs the purge; its own and the warden's old run details go too,
-- another role's stay.
SELECT is((SELECT command FROM cron.job WHERE jobname = messenger.call_reaper_job_name('purge') AND username <> 'messenger_call_reaper'),
          'SELECT * FROM messenger.purge_call_reaper_history()',
          'the hourly purge job belongs to the deployer, not to the job role');
INSERT INTO cron.job_run_details (jobid, database, username, command, status, return_message, start_time, end_time)
VALUES ((SELECT jobid FROM cron.job WHERE jobname = messenger.call_reaper_job_name('purge')), current_database(), current_user,
        'y', 'succeeded', 'SELECT 1', '1999-12-29 00:00+00', '1999-12-29 00:00:01+00'),
       ((SELECT jobid FROM cron.job WHERE jobname = messenger.call_reaper_job_name('warden')), current_database(), current_user,
        'y', 'succeeded', 'CALL 1', '1999-12-29 00:00+00', '1999-12-29 00:00:01+00'),
       (NULL, current_database(), current_user, 'y', 'succeeded', 'SELECT 1', '1999-12-29 00:00+00', '1999-12-29 00:00:01+00');
CREATE TEMP TABLE p3 AS SELECT * FROM messenger.purge_call_reaper_history(as_of => '2000-01-08 00:00+00');
SELECT is((SELECT job_run_details_purged FROM p3), 2::bigint,
          'the purge removes the purge and warden jobs'' own old run details (the warden runs every second on 1.5+)');
SELECT is((SELECT count(*)::integer FROM cron.job_run_details WHERE command = 'y'),
          1, 'the purge leaves another job''s history alone');

-- A run that never started (libpq mode's 'connection failed': no start or end time) goes once
-- a later run, by runid, ended before the cutoff; one after every such run stays, and so does a
-- row still 'starting'. Separate INSERTs: each row's runid comes after the one before.
INSERT INTO cron.job_run_details (jobid, database, username, command, status, return_message)
VALUES (NULL, current_database(), 'messenger_call_reaper', 'z', 'failed', 'connection failed');
INSERT INTO cron.job_run_details (jobid, database, username, command, status, return_message)
VALUES (NULL, current_database(), 'messenger_call_reaper', 'z', 'starting', NULL);
INSERT INTO cron.job_run_details (jobid, database, username, command, status, return_message, start_time, end_time)
VALUES (NULL, current_database(), 'messenger_call_reaper', 'z', 'succeeded', 'CALL', '1999-12-30 00:00+00', '1999-12-30 00:00:45+00');
INSERT INTO cron.job_run_details (jobid, database, username, command, status, return_message)
VALUES (NULL, current_database(), 'messenger_call_reaper', 'z', 'failed', 'connection failed');
CREATE TEMP TABLE z AS SELECT runid, status, end_time FROM cron.job_run_details WHERE command = 'z' ORDER BY runid;
CREATE TEMP TABLE p4 AS SELECT * FROM messenger.purge_call_reaper_history(as_of => '2000-01-08 00:00+00');
SELECT is((SELECT job_run_details_purged FROM p4), 2::bigint,
          'the purge removes the old run and the never-started one numbered before it');
SELECT is((SELECT count(*)::integer FROM cron.job_run_details
            WHERE runid = (SELECT min(runid) FROM pg_temp.z)),
          0, 'a connection failure numbered before a run that ended before the cutoff is purged');
SELECT results_eq($$SELECT d.status FROM cron.job_run_details AS d JOIN pg_temp.z USING (runid) ORDER BY runid$$,
                  ARRAY['starting', 'failed']::text[],
                  'a row still starting, and a connection failure after every run older than the cutoff, stay');

SELECT * FROM finish();
ROLLBACK;
