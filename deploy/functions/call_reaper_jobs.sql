-- Deploy call_timeout_reaper:functions/call_reaper_jobs to pg

BEGIN;

-- messenger.call_reaper_jobs() RETURNS one row per pg_cron job of the reaper
--
-- The reaper's three jobs (messenger.call_reaper_job_name: reaper, purge, warden) in this
-- database, and how the last run of each that finished ended:
--   kind, jobname      which job
--   jobid, username, active  its cron.job row; NULL when it is not scheduled, or not visible
--                      (pg_cron's row-level security shows a role its own jobs only: a deployer
--                      that is not a superuser sees the purge and warden jobs, not the job
--                      role's)
--   last_status, last_start, last_end, last_message  the newest finished run in
--                      cron.job_run_details ('succeeded' or 'failed'; a run that never connected
--                      in libpq mode is 'failed' with 'connection failed' and no start time)
--   failing            that run failed; NULL when nothing is known
-- A job that is scheduled and active yet fails every run (libpq mode without an authentication
-- rule, a job role that lost LOGIN) looks healthy in cron.job: this is where it shows, for
-- call_reaper_status() and, as a flag per job, call_reaper_metrics() and its alert.
-- No rows without pg_cron (scheduler=none). Read-only.
-- SECURITY DEFINER, owned by the deployer, whose rights on schema cron the reaper's own roles
-- never get; EXECUTE is granted to messenger_call_reaper_owner only, for the metrics function.
-- The message is pg_cron's (a connection failure, or the CALL's error), never a call's data: the
-- reaper's cycles log and keep their own errors.
CREATE FUNCTION messenger.call_reaper_jobs()
RETURNS TABLE (
    kind         text,
    jobname      text,
    jobid        bigint,
    username     text,
    active       boolean,
    last_status  text,
    last_start   timestamptz,
    last_end     timestamptz,
    last_message text,
    failing      boolean)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
BEGIN
    IF pg_catalog.to_regclass('cron.job_run_details') IS NULL THEN
        RETURN;
    END IF;
    -- Planned only once cron exists (PL/pgSQL plans a statement when it first runs it), so the
    -- function is created on servers without pg_cron as well. By runid, not start_time: a run
    -- that never connected has none.
    RETURN QUERY
        SELECT k.kind, n.jobname, j.jobid, j.username::text, j.active,
               d.status, d.start_time, d.end_time, d.return_message, d.status = 'failed'
          FROM unnest(ARRAY['reaper', 'purge', 'warden']) WITH ORDINALITY AS k (kind, o)
         CROSS JOIN LATERAL (SELECT messenger.call_reaper_job_name(k.kind) AS jobname) AS n
          LEFT JOIN cron.job AS j ON j.jobname = n.jobname AND j.database = pg_catalog.current_database()
          LEFT JOIN LATERAL (SELECT r.status, r.start_time, r.end_time, r.return_message
                               FROM cron.job_run_details AS r
                              WHERE r.jobid = j.jobid AND r.status IN ('succeeded', 'failed')
                              ORDER BY r.runid DESC
                              LIMIT 1) AS d ON true
         ORDER BY k.o;
END
$$;

COMMENT ON FUNCTION messenger.call_reaper_jobs() IS
$$The call-timeout reaper's pg_cron jobs in this database (reaper, purge, warden) and how the last finished run of each ended (status, times, pg_cron's message, failing). Read as the deployer; no rows without pg_cron. Usage: SELECT * FROM messenger.call_reaper_jobs();$$;
REVOKE ALL ON FUNCTION messenger.call_reaper_jobs() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION messenger.call_reaper_jobs() TO messenger_call_reaper_owner;

COMMIT;
