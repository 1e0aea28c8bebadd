-- Deploy call_timeout_reaper:procedures/run_call_reaper_warden to pg

BEGIN;

-- messenger.run_call_reaper_warden()
--
-- What the pg_cron job messenger-call-reaper-warden CALLs every minute: until the end of that
-- minute, once a second, messenger._end_stale_call_reaper_lock() with a COMMIT after each, so a
-- stale holder of the single-runner lock is ended within lock_ttl + 1 s and a scheduled cycle
-- within 30 s + 1 s. One schedule ('* * * * *') on pg_cron 1.4 and 1.5+: 1.4 has nothing
-- shorter, and a second-by-second loop is what the bound needs on both.
-- Why a job of its own: on pg_cron 1.4 the reaper's own CALL is the only other runner and it
-- is the one that is stuck; and ending a superuser's backend takes a superuser, which the job
-- role must never be. It belongs to the deploying role (cron/call_reaper_warden) and holds no
-- lock while it waits. A failing check is logged (WARNING event=warden_check_error) and retried the
-- next second. SECURITY INVOKER with no SET clause so it can COMMIT.
CREATE OR REPLACE PROCEDURE messenger.run_call_reaper_warden()
LANGUAGE plpgsql
AS $$
DECLARE
    v_end constant timestamptz := date_trunc('minute', clock_timestamp()) + interval '59 seconds';
    v_next timestamptz;
BEGIN
    LOOP
        BEGIN
            PERFORM messenger._end_stale_call_reaper_lock();
        EXCEPTION WHEN OTHERS THEN
            RAISE WARNING 'call_reaper event=warden_check_error sqlstate=% message=%', SQLSTATE, to_json(SQLERRM);
        END;
        COMMIT;
        EXIT WHEN clock_timestamp() >= v_end;
        -- A second in naps of 0.1 s, each its own transaction: a sleeping statement holds a
        -- snapshot, and one held for a second would keep every call closed in that second from
        -- being pruned or marked dead in the indexes (tests/python/test_snapshot_horizon.py).
        v_next := clock_timestamp() + interval '1 second';
        WHILE clock_timestamp() < v_next LOOP
            PERFORM pg_catalog.pg_sleep(least(0.1, extract(epoch FROM v_next - clock_timestamp())));
            COMMIT;
        END LOOP;
    END LOOP;
END
$$;

COMMENT ON PROCEDURE messenger.run_call_reaper_warden() IS
$$What the pg_cron job messenger-call-reaper-warden CALLs each minute: messenger._end_stale_call_reaper_lock() once a second until the minute ends.$$;
REVOKE ALL ON PROCEDURE messenger.run_call_reaper_warden() FROM PUBLIC;

COMMIT;
