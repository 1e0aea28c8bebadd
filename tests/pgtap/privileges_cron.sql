-- Privileges of the pg_cron jobs: who each job runs as, and that no reaper role can reach
-- schema cron. The grants every version has (routines, tables, columns, roles) are in
-- privileges.sql, which runs on PostgreSQL 16-18 without pg_cron too.
-- Needs pg_cron.
BEGIN;
SELECT plan(3);

-- pg_cron: the reaper job runs as the job role, which cannot reach schema cron (it could
-- unschedule or rewrite its job) and is no superuser; the purge and the warden run as the
-- deployer, so the job role needs no right to delete history, and the warden, which may end a
-- superuser's backend, as a superuser.
SELECT bag_eq(
    $$SELECT j.jobname::text, CASE WHEN j.username = session_user THEN 'deployer' ELSE j.username::text END
        FROM cron.job AS j
       WHERE j.jobname IN (messenger.call_reaper_job_name('reaper'), messenger.call_reaper_job_name('purge'),
                           messenger.call_reaper_job_name('warden'))$$,
    $$VALUES (messenger.call_reaper_job_name('reaper'), 'messenger_call_reaper'),
             (messenger.call_reaper_job_name('purge'), 'deployer'),
             (messenger.call_reaper_job_name('warden'), 'deployer')$$,
    'the reaper job runs as the job role, the purge and warden jobs as the deployer');
SELECT ok((SELECT r.rolsuper FROM cron.job AS j JOIN pg_roles AS r ON r.rolname = j.username
            WHERE j.jobname = messenger.call_reaper_job_name('warden')),
          'the warden job runs as a superuser (it may end a superuser''s backend)');
SELECT is(ARRAY(SELECT r.rolname::text FROM pg_roles AS r
                 WHERE r.rolname LIKE 'messenger\_call\_reaper%'
                   AND has_schema_privilege(r.oid, 'cron', 'USAGE') ORDER BY 1),
          '{}'::text[], 'no reaper role may use schema cron');

SELECT * FROM finish();
ROLLBACK;
