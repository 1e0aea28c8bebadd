-- Deploy call_timeout_reaper:procedures/run_call_reaper_warden to pg
-- The contract: COMMENT ON PROCEDURE below and docs/design.md ("Scheduling").

BEGIN;

-- What the pg_cron job messenger-call-reaper-warden CALLs. By the job's own schedule, which
-- cron/call_reaper_warden sets by pg_cron version:
--   * '1 seconds' (pg_cron 1.5+): one messenger._end_stale_call_reaper_lock() and return. A job
--     slot is held for one check (milliseconds), not all the time: providers cap concurrent jobs
--     (cron.max_running_jobs, 5 on RDS).
--   * anything else ('* * * * *' on 1.4, which has nothing shorter than a minute; no job, as with
--     scheduler=none): the check once a second until the minute ends, COMMITting after each,
--     napping in 0.1 s transactions (a sleeping statement holds a snapshot:
--     tests/python/test_snapshot_horizon.py).
-- The schedule, not pg_extension.extversion: after ALTER EXTENSION pg_cron UPDATE from 1.4 the
-- job stays on '* * * * *' until redeployed, and a single check a minute would break the bound.
-- Either way a stale holder is ended within lock_ttl + 1 s, a scheduled cycle within 30 s + 1 s.
-- A failing check is logged (WARNING event=warden_check_error) and retried the next second.
-- SECURITY INVOKER with no SET clause so it can COMMIT; run as the deployer (ending a
-- superuser's backend takes a superuser, which the job role must never be), who may read its
-- own cron.job row.
CREATE OR REPLACE PROCEDURE messenger.run_call_reaper_warden()
LANGUAGE plpgsql
AS $$
DECLARE
    v_end constant timestamptz := date_trunc('minute', clock_timestamp()) + interval '59 seconds';
    v_once boolean;
    v_next timestamptz;
BEGIN
    IF pg_catalog.to_regclass('cron.job') IS NOT NULL THEN
        SELECT bool_or(j.schedule ~ 'second') INTO v_once
          FROM cron.job AS j
         WHERE j.jobname = messenger.call_reaper_job_name('warden') AND j.database = pg_catalog.current_database();
    END IF;
    LOOP
        BEGIN
            PERFORM messenger._end_stale_call_reaper_lock();
        EXCEPTION WHEN OTHERS THEN
            RAISE WARNING 'call_reaper event=warden_check_error sqlstate=% message=%', SQLSTATE, to_json(SQLERRM);
        END;
        EXIT WHEN coalesce(v_once, false);
        COMMIT;
        EXIT WHEN clock_timestamp() >= v_end;
        v_next := clock_timestamp() + interval '1 second';
        WHILE clock_timestamp() < v_next LOOP
            PERFORM pg_catalog.pg_sleep(least(0.1, extract(epoch FROM v_next - clock_timestamp())));
            COMMIT;
        END LOOP;
    END LOOP;
END
$$;

COMMENT ON PROCEDURE messenger.run_call_reaper_warden() IS
$$What the pg_cron job messenger-call-reaper-warden CALLs: messenger._end_stale_call_reaper_lock() once when that job runs every second (pg_cron 1.5+), else once a second until the minute ends (pg_cron 1.4: the job runs every minute). A stale lock holder is ended within lock_ttl + 1 s.$$;
REVOKE ALL ON PROCEDURE messenger.run_call_reaper_warden() FROM PUBLIC;

COMMIT;
