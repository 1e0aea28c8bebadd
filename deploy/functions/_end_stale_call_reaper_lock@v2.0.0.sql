-- Deploy call_timeout_reaper:functions/_end_stale_call_reaper_lock to pg

BEGIN;

-- messenger._end_stale_call_reaper_lock() RETURNS integer
--
-- The lock warden's one check: nobody keeps the reaper's single-runner lock past its bounds,
-- busy or idle, in a transaction or at session level, whoever runs it. For each backend holding
-- the lock (messenger.call_reaper_lock_holder(), which says whether it may be a running cycle
-- and since when it has held the lock):
--   * first seen: recorded in messenger.call_reaper_lock_holders (held_since, and whether this
--     check's role may signal it); a holder that no longer holds the lock is deleted. Nothing
--     is written while the lock is free or the same holder is seen again;
--   * a scheduled cycle (role messenger_call_reaper, executing) whose transaction is older than
--     the 30 s max run duration is cancelled (pg_cancel_backend): its cycle rolls back whole.
--     This bounds pg_cron 1.4's cycles, which run under the CALL's 90 s statement_timeout; one
--     still holding the lock 5 s later is terminated;
--   * any other cycle (a DBA's drain or BEGIN; SELECT reap...; pg_sleep(300)) whose transaction
--     is older than settings.lock_ttl is terminated;
--   * any holder that is not a running cycle (an idle or idle-in-transaction session, a role
--     that may not run the reaper, a session-level pg_advisory_lock running short
--     transactions) that has held it longer than lock_ttl, counted from held_since, is
--     terminated (pg_terminate_backend, waiting up to 5 s). Cancelling would not do: an idle
--     session ignores it.
-- Each one is logged (WARNING event=lock_holder_ended, ids only) and recorded in
-- messenger.call_reaper_lock_takeovers; a holder it may not signal (a superuser's backend when
-- this role is not one) once, then left to the DBA (call_reaper_status, the exporter's
-- messenger_call_reaper_lock_held_seconds). Returns how many backends it acted on.
--
-- SECURITY INVOKER, EXECUTE revoked from PUBLIC: ending another role's backend takes
-- pg_signal_backend (a superuser's, a superuser), so it runs in the deployer's pg_cron job
-- messenger-call-reaper-warden (see run_call_reaper_warden), or as the deploying role from a
-- scheduler outside (README, "Without pg_cron"). It signals nothing but the lock's holders.
CREATE OR REPLACE FUNCTION messenger._end_stale_call_reaper_lock()
RETURNS integer
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    c_max_run constant interval := interval '30 seconds';
    c_job_role constant name := 'messenger_call_reaper'::name;
    v_ttl       interval;
    v_action    text;
    v_reason    text;
    v_ok        boolean;
    v_ended     integer := 0;
    v_since     timestamptz;
    v_age       interval;
    v_given_up  boolean;
    h           record;
BEGIN
    SELECT s.lock_ttl INTO STRICT v_ttl FROM messenger.call_reaper_settings AS s;
    -- Forget the holders that are gone (on an empty table: a scan of nothing, no write).
    DELETE FROM messenger.call_reaper_lock_holders AS w
     WHERE NOT EXISTS (SELECT FROM messenger.call_reaper_lock_holder() AS x
                        WHERE x.pid = w.pid AND x.backend_start IS NOT DISTINCT FROM w.backend_start);
    FOR h IN
        SELECT * FROM messenger.call_reaper_lock_holder() AS x
         WHERE x.pid <> pg_catalog.pg_backend_pid()
    LOOP
        v_since := coalesce(h.held_since, clock_timestamp());
        v_given_up := false;
        IF NOT h.recorded THEN
            -- Who may signal whom (signalfuncs.c): a superuser anyone; otherwise not a
            -- superuser's backend nor one without a role, and only with pg_signal_backend or the
            -- privileges of the backend's role.
            INSERT INTO messenger.call_reaper_lock_holders (pid, backend_start, role_name, held_since, warden_can_end)
            SELECT h.pid, h.backend_start, h.role_name, v_since,
                   coalesce(me.rolsuper
                            OR (NOT hr.rolsuper
                                AND (pg_catalog.pg_has_role(me.oid, hr.oid, 'USAGE')
                                     OR pg_catalog.pg_has_role(me.oid, 'pg_signal_backend', 'USAGE'))),
                            false)
              FROM pg_catalog.pg_roles AS me
              LEFT JOIN pg_catalog.pg_roles AS hr ON hr.rolname = h.role_name
             WHERE me.rolname = current_user;
        ELSE
            SELECT w.given_up INTO v_given_up FROM messenger.call_reaper_lock_holders AS w WHERE w.pid = h.pid;
        END IF;
        v_age := clock_timestamp() - CASE WHEN h.is_cycle THEN h.xact_start ELSE v_since END;
        IF h.is_cycle AND h.role_name = c_job_role AND v_age > c_max_run + interval '5 seconds' THEN
            -- The cancel of a second ago did not take: end the worker.
            v_action := 'terminated';
            v_reason := 'max_run';
        ELSIF h.is_cycle AND h.role_name = c_job_role AND v_age > c_max_run THEN
            v_action := 'cancelled';
            v_reason := 'max_run';
        ELSIF v_age > v_ttl THEN
            v_action := 'terminated';
            v_reason := 'lock_ttl';
        ELSE
            CONTINUE;
        END IF;
        -- Said once: a holder this role may not signal stays the DBA's (status, metrics, alert).
        CONTINUE WHEN v_given_up;
        BEGIN
            v_ok := CASE v_action WHEN 'cancelled' THEN pg_catalog.pg_cancel_backend(h.pid)
                                  ELSE pg_catalog.pg_terminate_backend(h.pid, 5000) END;
        EXCEPTION WHEN insufficient_privilege THEN
            v_ok := false;
        END;
        v_ok := coalesce(v_ok, false);
        IF NOT v_ok THEN
            UPDATE messenger.call_reaper_lock_holders AS w SET given_up = true, warden_can_end = false
             WHERE w.pid = h.pid;
        END IF;
        INSERT INTO messenger.call_reaper_lock_takeovers (pid, role_name, action, reason, held_for, signalled)
        VALUES (h.pid, h.role_name, v_action, v_reason, v_age, v_ok);
        RAISE WARNING 'call_reaper event=lock_holder_ended pid=% role=% action=% reason=% held_for_s=% signalled=% cycle=%',
            h.pid, h.role_name, v_action, v_reason, round(extract(epoch FROM v_age), 3), v_ok, h.is_cycle;
        v_ended := v_ended + 1;
    END LOOP;
    RETURN v_ended;
END
$$;

COMMENT ON FUNCTION messenger._end_stale_call_reaper_lock() IS
$$Lock warden check: records each holder of the reaper's single-runner lock when first seen (call_reaper_lock_holders), cancels a scheduled cycle older than 30 s, terminates another cycle whose transaction is older than lock_ttl and any other holder (idle, busy, session-level) that has held the lock longer than lock_ttl; logs and records each in call_reaper_lock_takeovers, a holder it may not signal once. Run every second by the pg_cron job messenger-call-reaper-warden.$$;
REVOKE ALL ON FUNCTION messenger._end_stale_call_reaper_lock() FROM PUBLIC;

COMMIT;
