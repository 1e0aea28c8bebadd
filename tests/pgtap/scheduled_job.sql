-- The pg_cron job: named, scheduled for this database, run as messenger_call_reaper (never a
-- superuser), CALLing an invoker procedure that can COMMIT; on pg_cron 1.4 the job role gets a
-- statement_timeout in this database that covers a minute of ticks.
BEGIN;
SELECT plan(12);

SELECT is((SELECT count(*)::integer FROM cron.job
            WHERE jobname = messenger.call_reaper_job_name('reaper') AND username = 'messenger_call_reaper'),
          1, 'exactly one messenger-call-timeout-reaper job runs as messenger_call_reaper');
SELECT is((SELECT count(*)::integer FROM cron.job WHERE jobname = messenger.call_reaper_job_name('reaper')),
          1, 'no other role has a job of that name');
SELECT is((SELECT command FROM cron.job WHERE jobname = messenger.call_reaper_job_name('reaper')),
          'CALL messenger.run_call_reaper_ticks()', 'the job CALLs the tick procedure');
SELECT is((SELECT database FROM cron.job WHERE jobname = messenger.call_reaper_job_name('reaper')),
          current_database()::text, 'the job runs in this database (cron.database_name)');
SELECT is((SELECT r.rolsuper FROM cron.job AS j JOIN pg_roles AS r ON r.rolname = j.username
            WHERE j.jobname = messenger.call_reaper_job_name('reaper')),
          false, 'the job role is not a superuser');
SELECT is((SELECT schedule FROM cron.job WHERE jobname = messenger.call_reaper_job_name('reaper')),
          CASE WHEN string_to_array(split_part((SELECT extversion FROM pg_extension WHERE extname = 'pg_cron'), '-', 1), '.')::integer[]
                    >= ARRAY[1, 5]
               THEN '15 seconds' ELSE '* * * * *' END,
          'pg_cron 1.5+ runs every 15 seconds natively, 1.4 every minute (the procedure ticks)');

SELECT is((SELECT prosecdef FROM pg_proc WHERE oid = 'messenger.run_call_reaper_ticks(timestamptz)'::regprocedure),
          false, 'the tick procedure is SECURITY INVOKER');
SELECT is((SELECT proconfig FROM pg_proc WHERE oid = 'messenger.run_call_reaper_ticks(timestamptz)'::regprocedure),
          NULL, 'the tick procedure has no SET clause, so its COMMITs work');
-- The job role's grants in messenger are in privileges.sql (every grant, once). These two stay:
-- they are pg_cron's objects, which privileges.sql does not list.
SELECT ok(NOT has_function_privilege('messenger_call_reaper', 'cron.alter_job(bigint, text, text, text, text, boolean)', 'EXECUTE'),
          'the job role cannot alter (resume or reschedule) jobs');
SELECT ok(NOT has_schema_privilege('messenger_call_reaper', 'cron', 'USAGE'),
          'the job role has no access to schema cron: it cannot schedule, unschedule or alter any job');

-- pg_db_role_setting: the role-wide 30 s stays; only this database gets the tick budget.
SELECT is((SELECT s.setconfig FROM pg_db_role_setting AS s
            WHERE s.setrole = 'messenger_call_reaper'::regrole
              AND s.setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())),
          CASE WHEN string_to_array(split_part((SELECT extversion FROM pg_extension WHERE extname = 'pg_cron'), '-', 1), '.')::integer[]
                    >= ARRAY[1, 5]
               THEN NULL ELSE ARRAY['statement_timeout=90s'] END,
          'on pg_cron 1.4 the job role has statement_timeout = 90s in this database (a minute of ticks + 30 s)');
SELECT ok((SELECT rolconfig FROM pg_roles WHERE rolname = 'messenger_call_reaper') @> ARRAY['statement_timeout=30s'],
          'the role-wide max run duration is still 30 s');

SELECT * FROM finish();
ROLLBACK;
