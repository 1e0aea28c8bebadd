-- Deploy call_timeout_reaper:functions/_end_stale_call_reaper_lock to pg

BEGIN;

-- messenger._end_stale_call_reaper_lock() RETURNS integer
--
-- The lock warden's one check: no transaction may keep the reaper's single-runner lock
-- (pg_try_advisory_xact_lock(messenger.call_reaper_lock_key()), found in pg_locks as that
-- function's comment says) past its bounds, busy or idle, whoever runs it. It looks only at the
-- backend holding that lock in this database and, counting from that backend's transaction
-- start (never later than when it took the lock):
--   * a scheduled cycle (the job role messenger_call_reaper, which only pg_cron runs) older than
--     the 30 s max run duration is cancelled (pg_cancel_backend): its cycle rolls back whole.
--     This bounds pg_cron 1.4's cycles, which run under the CALL's 90 s statement_timeout;
--     one still holding the lock 5 s later is terminated;
--   * any other holder whose transaction is older than settings.lock_ttl is terminated
--     (pg_terminate_backend, waiting up to 5 s): a DBA's BEGIN; SELECT reap...; pg_sleep(300)
--     or a forgotten open transaction. Cancelling would not do: an idle session ignores it.
-- Each one is logged (WARNING event=lock_holder_ended, ids only) and recorded in
-- messenger.call_reaper_lock_takeovers. Returns how many backends it signalled.
--
-- SECURITY INVOKER, EXECUTE revoked from PUBLIC: ending another role's backend takes
-- pg_signal_backend (a superuser's, a superuser), so it runs in the deployer's pg_cron job
-- messenger-call-reaper-warden (see
-- run_call_reaper_warden); a DBA may call it by hand. It signals nothing but the lock holder.
CREATE OR REPLACE FUNCTION messenger._end_stale_call_reaper_lock()
RETURNS integer
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    c_max_run constant interval := interval '30 seconds';
    v_ttl     interval;
    v_action  text;
    v_reason  text;
    v_ok      boolean;
    v_ended   integer := 0;
    h         record;
BEGIN
    SELECT s.lock_ttl INTO STRICT v_ttl FROM messenger.call_reaper_settings AS s;
    FOR h IN
        SELECT l.pid, a.usename, clock_timestamp() - a.xact_start AS age
          FROM pg_catalog.pg_locks AS l
          JOIN pg_catalog.pg_stat_activity AS a ON a.pid = l.pid
         WHERE l.locktype = 'advisory' AND l.granted
           AND l.database = (SELECT d.oid FROM pg_catalog.pg_database AS d
                              WHERE d.datname = pg_catalog.current_database())
           AND (l.classid::bigint << 32 | l.objid::bigint) = messenger.call_reaper_lock_key()
           AND l.objsubid = 1
           AND l.pid <> pg_catalog.pg_backend_pid()
    LOOP
        IF h.usename = 'messenger_call_reaper' AND h.age > c_max_run + interval '5 seconds' THEN
            -- The cancel of a second ago did not take: end the worker.
            v_action := 'terminated';
            v_reason := 'max_run';
        ELSIF h.usename = 'messenger_call_reaper' AND h.age > c_max_run THEN
            v_action := 'cancelled';
            v_reason := 'max_run';
        ELSIF h.age > v_ttl THEN
            v_action := 'terminated';
            v_reason := 'lock_ttl';
        ELSE
            CONTINUE;
        END IF;
        -- A deployer that is not a superuser (pg_signal_backend) may not signal a superuser's
        -- backend: that holder is recorded as not signalled, and the warden goes on.
        BEGIN
            v_ok := CASE v_action WHEN 'cancelled' THEN pg_catalog.pg_cancel_backend(h.pid)
                                  ELSE pg_catalog.pg_terminate_backend(h.pid, 5000) END;
        EXCEPTION WHEN insufficient_privilege THEN
            v_ok := false;
        END;
        INSERT INTO messenger.call_reaper_lock_takeovers (pid, role_name, action, reason, held_for, signalled)
        VALUES (h.pid, h.usename, v_action, v_reason, h.age, coalesce(v_ok, false));
        RAISE WARNING 'call_reaper event=lock_holder_ended pid=% role=% action=% reason=% held_for_s=% signalled=%',
            h.pid, h.usename, v_action, v_reason, round(extract(epoch FROM h.age), 3), coalesce(v_ok, false);
        v_ended := v_ended + 1;
    END LOOP;
    RETURN v_ended;
END
$$;

COMMENT ON FUNCTION messenger._end_stale_call_reaper_lock() IS
$$Lock warden check: cancels a scheduled reaper cycle older than 30 s and terminates any other backend whose transaction has held the reaper's single-runner lock longer than lock_ttl; logs and records each in call_reaper_lock_takeovers. Run every second by the pg_cron job messenger-call-reaper-warden.$$;
REVOKE ALL ON FUNCTION messenger._end_stale_call_reaper_lock() FROM PUBLIC;

COMMIT;
