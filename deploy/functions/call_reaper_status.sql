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
--   lock_held_since     since when it has held it, as best known (messenger.call_reaper_lock_holder:
--                       a cycle's transaction start; another holder's first sight by the warden,
--                       else an idle session's last state change, else its transaction start)
--   last_run_at, last_result  the newest row of the run ledger
--   last_idle_cycle_at  when the last cycle on the clock that found nothing to do ended: such a
--                       cycle leaves no ledger row (messenger.call_reaper_idle_cycle_at, unlogged;
--                       NULL on a standby, before the first one and after a crash)
--   lock_holder_role    the holder's role
--   lock_holder_state   its pg_stat_activity state (idle, active, idle in transaction)
--   lock_holder_is_cycle  it may be a running reaper cycle (the warden times it by its transaction)
--   lock_warden_can_end whether the warden that has seen it may end it (false: a superuser's
--                       backend and a warden that is not one); NULL while no warden has seen it
--                       (with scheduler=none and no check run from outside: never)
--   cron_database       the database pg_cron keeps the jobs in (messenger.call_reaper_cron_jobs):
--                       this one, or cron.database_name when the jobs run here through
--                       cron.schedule_in_database; NULL when nothing is scheduled (scheduler=none).
--                       There, the job's own row and run details are read in that database
--                       (README "Server settings"); here job_scheduled and schedule are what the
--                       deploy recorded, job_active and jobs are unknown (NULL, '[]')
--   jobs                each of the reaper's pg_cron jobs with how its last finished run ended
--                       (messenger.call_reaper_jobs: job, last_status, last_end, last_error), so
--                       a job that is scheduled and active but fails every run (libpq mode
--                       without an authentication rule) shows here; '[]' without pg_cron
--   wake_at_deadline    the setting (2.1): the job wakes at Ringing calls' deadlines between ticks
--   next_deadline       the earliest deadline of a Ringing call the last run (recorded or idle)
--                       left ringing (messenger.call_reaper_next_deadline), NULL for none
--   sleeping_to_deadline  a job CALL is in its nap with that deadline within a polling_interval
--                       (wake_at_deadline)
-- 2.1 added the last four: the released function (functions/call_reaper_status@v2.0.0) is
-- dropped and created again, as a function's result columns cannot change in place.
-- Changes nothing, takes no lock. SECURITY INVOKER: it reads cron.job and the job's CALLs in
-- pg_stat_activity with the caller's rights (a DBA), the lock's holder through
-- call_reaper_lock_holder (with the deployer's, as the warden sees it); EXECUTE is revoked from
-- PUBLIC.
-- The job's CALLs in flight are this database's only: another product database of the
-- cluster runs a job of the same command as the same role.
DROP FUNCTION IF EXISTS messenger.call_reaper_status();
CREATE FUNCTION messenger.call_reaper_status(
    OUT paused              boolean,
    OUT job_scheduled       boolean,
    OUT job_active          boolean,
    OUT schedule            text,
    OUT polling_interval    interval,
    OUT job_calls_in_flight integer,
    OUT lock_holder_pid     integer,
    OUT lock_held_since     timestamptz,
    OUT last_run_at         timestamptz,
    OUT last_result         text,
    OUT lock_holder_role    name,
    OUT lock_holder_state   text,
    OUT lock_holder_is_cycle boolean,
    OUT lock_warden_can_end boolean,
    OUT jobs                jsonb,
    OUT cron_database       name,
    OUT wake_at_deadline    boolean,
    OUT next_deadline       timestamptz,
    OUT sleeping_to_deadline boolean,
    OUT last_idle_cycle_at  timestamptz)
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
BEGIN
    -- A standby cannot read an unlogged sequence; NULL before the first value.
    IF NOT pg_catalog.pg_is_in_recovery() THEN
        BEGIN
            last_idle_cycle_at := pg_catalog.to_timestamp(
                (pg_catalog.pg_sequence_last_value('messenger.call_reaper_idle_cycle_at'::regclass) / 1000.0)::double precision);
        EXCEPTION WHEN internal_error OR data_corrupted THEN
            -- Unreadable after a promotion (messenger._reap_ledger): NULL, the ledger has them.
            last_idle_cycle_at := NULL;
        END;
    END IF;
    SELECT s.paused, s.polling_interval, s.wake_at_deadline,
           (SELECT count(*)::integer FROM pg_catalog.pg_stat_activity AS a
             WHERE a.usename = 'messenger_call_reaper' AND a.state = 'active'
               AND a.datname = pg_catalog.current_database()
               AND a.query LIKE 'CALL messenger.run_call_reaper_ticks(%'),
           h.pid, h.held_since, r.started_at, r.result,
           messenger.call_reaper_next_deadline(greatest(r.as_of, last_idle_cycle_at)),
           s.wake_at_deadline AND EXISTS (
               SELECT FROM pg_catalog.pg_stat_activity AS a
                WHERE a.usename = 'messenger_call_reaper' AND a.state = 'active' AND a.wait_event = 'PgSleep'
                  AND a.datname = pg_catalog.current_database()
                  AND a.query LIKE 'CALL messenger.run_call_reaper_ticks(%'),
           h.role_name, h.state, h.is_cycle, h.warden_can_end
      INTO paused, polling_interval, wake_at_deadline, job_calls_in_flight, lock_holder_pid, lock_held_since,
           last_run_at, last_result, next_deadline, sleeping_to_deadline,
           lock_holder_role, lock_holder_state, lock_holder_is_cycle, lock_warden_can_end
      FROM messenger.call_reaper_settings AS s
      LEFT JOIN LATERAL (SELECT x.pid, x.held_since, x.role_name, x.state, x.is_cycle, x.warden_can_end
                           FROM messenger.call_reaper_lock_holder() AS x
                          ORDER BY x.held_since NULLS LAST
                          LIMIT 1) AS h ON true
      LEFT JOIN LATERAL (SELECT o.started_at, o.result, o.as_of FROM messenger.call_reaper_runs AS o
                          ORDER BY o.started_at DESC LIMIT 1) AS r ON true;
    SELECT coalesce(jsonb_agg(jsonb_build_object('job', j.jobname, 'scheduled', j.jobid IS NOT NULL,
                                                 'last_status', j.last_status, 'last_end', j.last_end,
                                                 'last_error', CASE WHEN j.failing THEN j.last_message END)),
                    '[]'::jsonb)
      INTO jobs
      FROM messenger.call_reaper_jobs() AS j;
    SELECT r.cron_database INTO cron_database FROM messenger.call_reaper_cron_jobs AS r WHERE r.kind = 'reaper';
    -- Sleeping to a deadline: a job CALL in its nap with a Ringing call's deadline before its
    -- next tick could come.
    sleeping_to_deadline := coalesce(sleeping_to_deadline AND next_deadline < pg_catalog.now() + polling_interval, false);
    -- Dynamic: without pg_cron here (scheduler=none, or the jobs kept in another database) there
    -- is no cron.job to name.
    job_scheduled := false;
    IF pg_catalog.to_regclass('cron.job') IS NOT NULL THEN
        EXECUTE 'SELECT true, j.active, j.schedule FROM cron.job AS j'
                ' WHERE j.jobname = $1 AND j.username = $2 AND j.database = pg_catalog.current_database()'
           INTO job_scheduled, job_active, schedule
          USING messenger.call_reaper_job_name('reaper'), 'messenger_call_reaper';
        job_scheduled := coalesce(job_scheduled, false);
    ELSIF cron_database IS NOT NULL THEN
        SELECT true, r.schedule INTO job_scheduled, schedule
          FROM messenger.call_reaper_cron_jobs AS r WHERE r.kind = 'reaper';
    END IF;
END
$$;

COMMENT ON FUNCTION messenger.call_reaper_status() IS
$$The call-timeout reaper's state in one row: paused flag, pg_cron job (scheduled, active, schedule), polling interval, job CALLs in flight, single-runner lock holder (pid, held since as best known, role, state, whether it is a running cycle and whether the lock warden can end it), last run, each pg_cron job of the reaper with how its last run ended, the database pg_cron keeps the jobs in, the deadline wake: whether it is on, the next Ringing call's deadline after the last run, whether the job is sleeping to it; and when the last idle cycle on the clock (no ledger row) ended. Usage: SELECT * FROM messenger.call_reaper_status();$$;
REVOKE ALL ON FUNCTION messenger.call_reaper_status() FROM PUBLIC;

COMMIT;
