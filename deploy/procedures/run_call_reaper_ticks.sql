-- Deploy call_timeout_reaper:procedures/run_call_reaper_ticks to pg

BEGIN;

-- messenger.run_call_reaper_ticks(as_of timestamptz DEFAULT NULL)
--
-- What the pg_cron job `messenger-call-timeout-reaper` CALLs; each cycle is its own transaction
-- (COMMIT after each), so the single-runner lock is held only while one runs. Its waits are
-- naps of at most 0.1 s, each its own transaction (a sleeping statement holds a snapshot). It
-- waits for one of three things, v_for:
--   * 'tick': the next polling_interval tick: a full cycle (messenger._reap_cycle), followed at
--     once by more while one closes a full batch (catch-up: at most 30 s a tick, and while 5 s
--     of the CALL's statement_timeout are left). A '... seconds' schedule (pg_cron 1.5+, as
--     messenger.call_reaper_cron_jobs recorded it, else pg_extension) runs one tick per CALL; a
--     minute schedule (pg_cron 1.4) the ticks of its minute, a tick a whole interval late dropped.
--   * 'deadline': with settings.wake_at_deadline, the next Ringing call's deadline after the last
--     cycle's as_of (messenger.call_reaper_next_deadline, probed at every nap), at least 20 ms
--     after the last cycle: the lean closure messenger._reap_deadline, or the full cycle when it
--     falls back or closed a full batch. Not after a skipped cycle (the lock's holder closes them).
--   * 'handover': no tick left: deadlines are waited for until 100 ms before the next CALL is due
--     or until 5 s of the budget are left, then it returns (pg_cron starts no run of a job while
--     its previous run is active).
-- Before every wait it re-reads paused and wake_at_deadline, and returns when the reaper is
-- paused. A deploy or a revert beneath the running CALL: once its own definition was replaced,
-- it CALLs the new one, which runs the rest of its schedule; while that read fails (a grant or a
-- column taken away) it goes on ticking without the wake, with one WARNING event=wake_off.
-- as_of (tests, a DBA): one tick with that as_of, its catch-up included, paused or not.
-- Why each of these: docs/design.md, "Scheduling".
--
-- statement_timeout covers a whole CALL, COMMITs included: on pg_cron 1.4 cron/call_reaper sets
-- 90 s for the job role (a minute of ticks plus one 30 s run); a tick starts only while 30 s of
-- it remain (else event=ticks_cut_short), and the warden cancels a scheduled cycle after 30 s.
-- SECURITY INVOKER with no SET clause: a procedure with a SET clause cannot COMMIT. It runs as
-- the job role, which may EXECUTE the reaper's SECURITY DEFINER routines and read the settings
-- and its job's recorded schedule, nothing of pg_cron.
CREATE OR REPLACE PROCEDURE messenger.run_call_reaper_ticks(as_of timestamptz DEFAULT NULL)
LANGUAGE plpgsql
AS $$
DECLARE
    c_max_run  constant interval := interval '30 seconds';
    c_catch_up_reserve constant interval := interval '5 seconds';
    c_deadline_gap constant interval := interval '20 milliseconds';
    c_handover constant interval := interval '100 milliseconds';
    v_started  constant timestamptz := clock_timestamp();
    v_self     text;          -- this procedure's pg_proc row version when the CALL started
    v_for      text;          -- what the wait is for: 'tick', 'deadline' or 'handover'
    v_interval interval;
    v_once     boolean;
    v_wake     boolean := false;
    v_paused   boolean;
    v_budget   interval;
    v_tick     timestamptz;
    v_end      timestamptz;
    v_at       timestamptz;   -- when: the tick, or a deadline before it (NULL: the handover)
    v_until    timestamptz;   -- until when deadlines are waited for (the handover)
    v_next     timestamptz;
    v_done     timestamptz := '-infinity'::timestamptz;
    v_wait     numeric;
    v_ran      boolean := false;
    v_batch    integer;
    v_cycle    messenger.call_reaper_cycle;
BEGIN
    -- pg_settings.setting is in milliseconds; 0 means no statement_timeout at all.
    SELECT s.polling_interval, s.batch_size, s.paused,
           (SELECT p.xmin::text FROM pg_catalog.pg_proc AS p
             WHERE p.oid = pg_catalog.to_regprocedure('messenger.run_call_reaper_ticks(timestamptz)')),
           coalesce((SELECT r.schedule ~ 'second' FROM messenger.call_reaper_cron_jobs AS r
                      WHERE r.kind = 'reaper' AND run_call_reaper_ticks.as_of IS NULL),
                    (SELECT string_to_array(split_part(e.extversion, '-', 1), '.')::integer[] >= ARRAY[1, 5]
                       FROM pg_catalog.pg_extension AS e WHERE e.extname = 'pg_cron')),
           (SELECT nullif(g.setting::bigint, 0) * interval '1 millisecond' FROM pg_catalog.pg_settings AS g
             WHERE g.name = 'statement_timeout')
      INTO STRICT v_interval, v_batch, v_paused, v_self, v_once, v_budget
      FROM messenger.call_reaper_settings AS s;
    IF run_call_reaper_ticks.as_of IS NOT NULL OR v_once THEN
        v_tick := v_started;
        v_end := v_started + v_interval;
    ELSE
        v_end := date_trunc('minute', v_started) + interval '1 minute';
        v_tick := date_trunc('minute', v_started)
                  + v_interval * floor(extract(epoch FROM v_started - date_trunc('minute', v_started))
                                       / extract(epoch FROM v_interval));
    END IF;
    LOOP
        LOOP
            -- A deploy or a revert beneath the running CALL: a new definition takes over in a
            -- nested CALL; a read that fails leaves the ticks without the wake (design.md).
            IF (SELECT p.xmin::text FROM pg_catalog.pg_proc AS p
                 WHERE p.oid = pg_catalog.to_regprocedure('messenger.run_call_reaper_ticks(timestamptz)')) IS DISTINCT FROM v_self THEN
                RAISE LOG 'call_reaper event=ticks_handed_over reason=redefined';
                COMMIT;
                CALL messenger.run_call_reaper_ticks(run_call_reaper_ticks.as_of);
                RETURN;
            END IF;
            BEGIN
                SELECT s.paused, s.wake_at_deadline AND run_call_reaper_ticks.as_of IS NULL INTO v_paused, v_wake
                  FROM messenger.call_reaper_settings AS s;
            EXCEPTION WHEN OTHERS THEN
                IF v_wake IS NOT NULL THEN   -- once, not at every nap
                    RAISE WARNING 'call_reaper event=wake_off reason=settings_unreadable sqlstate=% message=%', SQLSTATE, to_json(SQLERRM);
                END IF;
                v_wake := NULL;
            END;
            IF coalesce(v_paused, true) AND run_call_reaper_ticks.as_of IS NULL THEN
                RAISE LOG 'call_reaper event=ticks_stopped reason=paused';
                RETURN;
            END IF;
            v_for := CASE WHEN v_tick < v_end THEN 'tick' ELSE 'handover' END;
            v_at := CASE WHEN v_for = 'tick' THEN v_tick END;
            -- Not after a skipped cycle (the lock's holder closes them); until the handover.
            v_until := CASE WHEN v_wake AND v_cycle.result IN ('completed', 'failed')
                            THEN least(v_end - c_handover, v_started + v_budget - c_catch_up_reserve) END;
            v_next := CASE WHEN v_until IS NOT NULL THEN messenger.call_reaper_next_deadline(v_cycle.as_of) END;
            IF v_next < v_until AND greatest(v_next, v_done + c_deadline_gap) < coalesce(v_at, 'infinity') THEN
                v_for := 'deadline';
                v_at := greatest(v_next, v_done + c_deadline_gap);
            END IF;
            COMMIT;
            v_wait := extract(epoch FROM coalesce(v_at, v_until) - clock_timestamp());
            IF v_wait IS NULL OR v_wait <= 0 THEN
                EXIT WHEN v_for <> 'handover';
                RETURN;
            END IF;
            PERFORM pg_catalog.pg_sleep(least(v_wait, 0.1));
            EXIT WHEN v_wait <= 0.1 AND v_for <> 'handover';   -- slept to it: no second read
        END LOOP;
        -- A deadline: the lean closure; the full cycle when it falls back or closed a full batch.
        IF v_for = 'deadline' THEN
            v_cycle := messenger._reap_deadline(v_cycle.as_of);
            COMMIT;
            IF v_cycle.result = 'completed' AND v_cycle.missed_count < v_batch THEN
                v_done := clock_timestamp();
                CONTINUE;
            END IF;
        -- The first tick always runs: the CALL's own budget is then exactly that cycle's.
        ELSIF v_for = 'tick' AND v_ran AND v_budget IS NOT NULL AND clock_timestamp() + c_max_run > v_started + v_budget THEN
            RAISE WARNING 'call_reaper event=ticks_cut_short tick=% statement_timeout=% hint=%', v_tick, v_budget,
                'on pg_cron 1.4 messenger_call_reaper needs statement_timeout >= 90s in this database';
            RETURN;
        END IF;
        LOOP
            v_cycle := messenger._reap_cycle(NULL, NULL, NULL, run_call_reaper_ticks.as_of, v_cycle.run_id);
            COMMIT;
            v_ran := true;
            EXIT WHEN v_cycle.result <> 'completed'
                   OR greatest(v_cycle.missed_count, v_cycle.failed_count) < v_batch
                   OR clock_timestamp() >= v_at + c_max_run
                   OR (v_budget IS NOT NULL AND clock_timestamp() + c_catch_up_reserve > v_started + v_budget);
        END LOOP;
        v_done := clock_timestamp();
        IF v_for = 'tick' THEN
            v_tick := v_tick + v_interval;
            WHILE v_tick + v_interval <= clock_timestamp() AND v_tick < v_end LOOP
                v_tick := v_tick + v_interval;
            END LOOP;
        END IF;
    END LOOP;
END
$$;

COMMENT ON PROCEDURE messenger.run_call_reaper_ticks(timestamptz) IS
$$What the pg_cron job messenger-call-timeout-reaper CALLs: one reaper cycle per polling_interval tick, COMMIT after each (a minute schedule, pg_cron 1.4: the ticks of the current minute; a schedule in seconds, 1.5+: one cycle). Between ticks, with wake_at_deadline, also closes the Ringing calls at each deadline (messenger.call_reaper_next_deadline; messenger._reap_deadline, or the full cycle when it cannot close them), until the next CALL is due. A deploy or a revert beneath a running CALL: it CALLs the new definition for the rest of its schedule. A cycle that closed a full batch is followed at once by another (catch-up, at most 30 s per tick). Stops at the next tick once the reaper is paused (messenger.pause_call_reaper()). CALL messenger.run_call_reaper_ticks(as_of => ...) runs one tick with that as_of, paused or not.$$;

REVOKE ALL ON PROCEDURE messenger.run_call_reaper_ticks(timestamptz) FROM PUBLIC;
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER PROCEDURE messenger.run_call_reaper_ticks(timestamptz) OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;
GRANT EXECUTE ON PROCEDURE messenger.run_call_reaper_ticks(timestamptz) TO messenger_call_reaper;
-- The procedure runs as the job role and needs the interval it ticks at, the pause flag and the
-- batch size that tells a full batch (catch-up), and whether to wake at deadlines, nothing else of the row.
GRANT SELECT (polling_interval, paused, batch_size, wake_at_deadline) ON messenger.call_reaper_settings TO messenger_call_reaper;
-- Which schedule its job runs on (the one-cycle or the minute path), nothing else of the record;
-- the operator too, who may CALL it without as_of.
GRANT SELECT (kind, schedule) ON messenger.call_reaper_cron_jobs TO messenger_call_reaper, messenger_call_reaper_operator;

COMMIT;
