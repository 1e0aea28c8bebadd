-- Deploy call_timeout_reaper:functions/call_reaper_status to pg

BEGIN;

-- messenger.call_reaper_status() RETURNS one row
--
-- What a DBA asks before and after pausing, resuming or changing the reaper, in one read:
--   paused              messenger.call_reaper_settings.paused (pause_call_reaper/resume_call_reaper)
--   job_scheduled       the pg_cron job messenger-call-timeout-reaper exists for messenger_call_reaper
--   job_active          its cron.job.active (false only if someone used cron.alter_job)
--   schedule            its pg_cron schedule ('* * * * *' on 1.4, '<n> seconds' on 1.5+)
--   polling_interval    the configured tick
--   job_calls_in_flight the job's CALLs executing now (pg_stat_activity)
--   lock_holder_pid     the backend holding the single-runner lock, NULL when free
--   lock_held_since     that backend's transaction start (the lock TTL counts from it)
--   last_run_at, last_result  the newest row of the run ledger
-- Changes nothing, takes no lock. SECURITY INVOKER: it reads cron.job and other roles'
-- pg_stat_activity rows with the caller's rights (a DBA); EXECUTE is revoked from PUBLIC.
CREATE OR REPLACE FUNCTION messenger.call_reaper_status(
    OUT paused              boolean,
    OUT job_scheduled       boolean,
    OUT job_active          boolean,
    OUT schedule            text,
    OUT polling_interval    interval,
    OUT job_calls_in_flight integer,
    OUT lock_holder_pid     integer,
    OUT lock_held_since     timestamptz,
    OUT last_run_at         timestamptz,
    OUT last_result         text)
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
BEGIN
    SELECT s.paused, s.polling_interval,
           (SELECT count(*)::integer FROM pg_catalog.pg_stat_activity AS a
             WHERE a.usename = 'messenger_call_reaper' AND a.state = 'active'
               AND a.query LIKE 'CALL messenger.run_call_reaper_ticks(%'),
           h.pid, h.xact_start, r.started_at, r.result
      INTO paused, polling_interval, job_calls_in_flight, lock_holder_pid, lock_held_since,
           last_run_at, last_result
      FROM messenger.call_reaper_settings AS s
      LEFT JOIN LATERAL (SELECT l.pid, a.xact_start
                           FROM pg_catalog.pg_locks AS l
                           LEFT JOIN pg_catalog.pg_stat_activity AS a ON a.pid = l.pid
                          WHERE l.locktype = 'advisory' AND l.granted
                            AND l.database = (SELECT d.oid FROM pg_catalog.pg_database AS d
                                               WHERE d.datname = pg_catalog.current_database())
                            AND (l.classid::bigint << 32 | l.objid::bigint) = messenger.call_reaper_lock_key()
                            AND l.objsubid = 1
                          LIMIT 1) AS h ON true
      LEFT JOIN LATERAL (SELECT o.started_at, o.result FROM messenger.call_reaper_runs AS o
                          ORDER BY o.started_at DESC LIMIT 1) AS r ON true;
    -- Dynamic: without pg_cron (scheduler=none) there is no cron.job to name.
    job_scheduled := false;
    IF pg_catalog.to_regclass('cron.job') IS NOT NULL THEN
        EXECUTE 'SELECT true, j.active, j.schedule FROM cron.job AS j WHERE j.jobname = $1 AND j.username = $2'
           INTO job_scheduled, job_active, schedule
          USING messenger.call_reaper_job_name('reaper'), 'messenger_call_reaper';
        job_scheduled := coalesce(job_scheduled, false);
    END IF;
END
$$;

COMMENT ON FUNCTION messenger.call_reaper_status() IS
$$The call-timeout reaper's state in one row: paused flag, pg_cron job (scheduled, active, schedule), polling interval, job CALLs in flight, single-runner lock holder, last run. Usage: SELECT * FROM messenger.call_reaper_status();$$;
REVOKE ALL ON FUNCTION messenger.call_reaper_status() FROM PUBLIC;

COMMIT;
