-- Deploy call_timeout_reaper:functions/purge_call_reaper_history to pg

BEGIN;

-- messenger.purge_call_reaper_history(as_of, batch_size)
--
-- Retention of the reaper's history. pg_cron never purges cron.job_run_details and a 15 s job
-- writes ~5,800 rows a day; the reaper's ledger grows as fast. Removes, up to batch_size rows
-- each, oldest first:
--   * messenger.call_reaper_runs rows that started before as_of - retention (through the
--     SECURITY DEFINER _purge_call_reaper_runs, which keeps the skipped-run total monotonic);
--   * cron.job_run_details rows in this database of the reaper's role (every job run as
--     messenger_call_reaper, past job ids included) and of the purge job itself
--     (messenger-call-reaper-purge) that ended before the same cutoff.
-- Returns the cutoff and the counts. Idempotent: a second call finds nothing older.
-- Run hourly by the pg_cron job messenger-call-reaper-purge, which belongs to the role that
-- deployed the reaper (cron/call_reaper_purge); a DBA may run it by hand.
--
-- SECURITY INVOKER on purpose, and not executable by the job role: with an arbitrary as_of it
-- wipes history, so only its caller's own rights decide. pg_cron's row-level security shows a
-- role only its own run details. A superuser deployer bypasses it, so the explicit filter keeps
-- the delete to the reaper's rows; a deployer that is not one (managed PostgreSQL) purges only
-- its own jobs' rows, and the job role's stay (docs/managed-postgresql.md).
-- Owned by the deployer, with a pinned search_path: the deployer's own pg_cron job runs it with
-- the deployer's rights (a superuser on a self-managed server), so it must not belong to a role
-- the deploy created (messenger_call_reaper_owner could otherwise CREATE OR REPLACE it), and a
-- search_path of the session must not redirect a name in it. What it calls with more than the
-- caller's rights (_purge_call_reaper_runs) is SECURITY DEFINER and runs as that owner only.
-- The warden's run details go too: on pg_cron 1.5+ it runs every second (86,400 rows a day).
-- A run that never started has no start or end time: in libpq mode pg_cron writes each run the
-- job role cannot connect for as status 'failed', 'connection failed', both times NULL (one a
-- polling interval until the rule is added). Such a row goes once a later run (a higher runid,
-- from pg_cron's one sequence) ended before the cutoff: pg_cron numbers a run before it starts,
-- so that later run, and this one before it, began before the cutoff. Only 'failed' ones: a row
-- still 'starting' has no times either.
CREATE OR REPLACE FUNCTION messenger.purge_call_reaper_history(
    as_of      timestamptz DEFAULT NULL,
    batch_size integer     DEFAULT 10000)
RETURNS TABLE (cutoff timestamptz, runs_purged bigint, skipped_runs_folded bigint,
               job_run_details_purged bigint)
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
    v_before bigint;   -- runids below it were numbered before the cutoff
BEGIN
    SELECT p.cutoff, p.runs_purged, p.skipped_purged
      INTO cutoff, runs_purged, skipped_runs_folded
      FROM messenger._purge_call_reaper_runs(coalesce(purge_call_reaper_history.as_of, clock_timestamp()),
                                             purge_call_reaper_history.batch_size) AS p;
    job_run_details_purged := 0;
    IF pg_catalog.to_regclass('cron.job_run_details') IS NULL THEN
        RETURN NEXT;   -- no pg_cron here (scheduler=none): only the ledger has history
        RETURN;
    END IF;
    SELECT max(l.runid) INTO v_before FROM cron.job_run_details AS l WHERE l.end_time < cutoff;
    WITH purged AS (
        DELETE FROM cron.job_run_details AS d
         WHERE d.runid IN (SELECT o.runid
                             FROM cron.job_run_details AS o
                            WHERE (o.username = 'messenger_call_reaper'
                                   OR o.jobid IN (SELECT j.jobid FROM cron.job AS j
                                                   WHERE j.jobname IN (messenger.call_reaper_job_name('purge'),
                                                                       messenger.call_reaper_job_name('warden'))))
                              AND o.database = current_database()
                              AND (coalesce(o.end_time, o.start_time) < cutoff
                                   OR (o.status = 'failed' AND o.start_time IS NULL AND o.end_time IS NULL
                                       AND o.runid < v_before))
                            ORDER BY o.runid
                            LIMIT purge_call_reaper_history.batch_size)
        RETURNING 1
    )
    SELECT count(*) INTO job_run_details_purged FROM purged;
    RAISE LOG 'call_reaper event=job_run_details_purged cutoff=% rows=%', cutoff, job_run_details_purged;
    RETURN NEXT;
END
$$;

COMMENT ON FUNCTION messenger.purge_call_reaper_history(timestamptz, integer) IS
$$Purges reaper history older than call_reaper_settings.retention (default 7 days): messenger.call_reaper_runs (skipped runs folded into call_reaper_counters.runs_skipped_purged) and the reaper's cron.job_run_details (a run that never started, once a later run ended before the cutoff). Runs hourly from the deployer's pg_cron job messenger-call-reaper-purge. Usage: SELECT * FROM messenger.purge_call_reaper_history();$$;

REVOKE ALL ON FUNCTION messenger.purge_call_reaper_history(timestamptz, integer) FROM PUBLIC;

COMMIT;
