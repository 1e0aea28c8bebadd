-- Deploy call_timeout_reaper:functions/call_reaper_job_name to pg

BEGIN;

-- messenger.call_reaper_job_name(job text) RETURNS text
--
-- The names of the reaper's pg_cron jobs, the one place they are written for code that looks
-- its jobs up (call_reaper_status, purge_call_reaper_history; the settings guard reads the
-- names recorded in call_reaper_cron_jobs) and for the
-- tests: 'reaper' (messenger-call-timeout-reaper, runs the cycles), 'purge'
-- (messenger-call-reaper-purge, retention) and 'warden' (messenger-call-reaper-warden, the lock
-- warden); NULL for anything else. The cron/ changes schedule the jobs under these
-- names; tests/pgtap/scheduled_job.sql holds the schedule to them.
-- LANGUAGE sql, IMMUTABLE: inlined as a constant. EXECUTE stays granted to PUBLIC: it reads
-- nothing.
CREATE OR REPLACE FUNCTION messenger.call_reaper_job_name(job text)
RETURNS text
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
RETURN CASE job
           WHEN 'reaper' THEN 'messenger-call-timeout-reaper'
           WHEN 'purge'  THEN 'messenger-call-reaper-purge'
           WHEN 'warden' THEN 'messenger-call-reaper-warden'
       END;

COMMENT ON FUNCTION messenger.call_reaper_job_name(text) IS
$$The name of one of the call-timeout reaper's pg_cron jobs: 'reaper', 'purge' or 'warden'.$$;

COMMIT;
