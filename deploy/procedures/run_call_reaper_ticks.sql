-- Deploy call_timeout_reaper:procedures/run_call_reaper_ticks to pg

BEGIN;

-- messenger.run_call_reaper_ticks(as_of timestamptz DEFAULT NULL)
--
-- What the pg_cron job `messenger-call-timeout-reaper` CALLs. It runs one reaper cycle
-- (messenger.reap_call_timeouts with the configured options, as messenger._reap_cycle told the
-- previous cycle's run id, see drain_call_timeouts) at each polling_interval tick and
-- COMMITs after each, so every cycle is its own transaction and holds the single-runner lock
-- only while it runs.
--   * pg_cron 1.4 (schedule '* * * * *', no sub-minute schedules): one CALL per minute runs the
--     ticks minute + k * polling_interval that are still ahead or due, sleeping in between.
--     A tick already a whole interval late is dropped, not run twice in a row.
--   * pg_cron 1.5+ (native schedule 'N seconds'): one CALL runs exactly one tick, now (and the
--     deadline cycles until the next CALL, below).
--     Which of the two is the job's schedule as cron/call_reaper recorded it
--     (messenger.call_reaper_cron_jobs), not pg_cron's version here: a product database whose
--     jobs pg_cron keeps in another database has no pg_cron of its own (it used to run the
--     minute loop under a '15 seconds' schedule, holding a job slot 9 s of every 15), and an
--     extversion updated after the deploy does not change the schedule until the cron changes
--     are deployed again. Without that record (no pg_cron job: an outside scheduler CALLs it)
--     pg_extension decides, as before; the job role has no access to schema cron.
--   * Between ticks, with settings.wake_at_deadline (the default; never for an as_of run), it
--     also wakes at the next Ringing call's deadline (messenger.call_reaper_next_deadline after
--     the last cycle's as_of, probed again at every nap, so a call committed late is seen within
--     a nap) and runs a cycle then, its as_of at or just past the deadline: a Missed call closes within
--     a few milliseconds of its answer window instead of up to polling_interval later. Deadline
--     cycles are at least c_deadline_gap apart (a stream of deadlines costs at most one cycle per
--     gap, each closing those due since the last), run while c_catch_up_reserve of the CALL's
--     budget is left, and follow a full batch with catch-up as a tick does. The CALL then stays
--     until c_handover before the next CALL is due (the minute, or one polling_interval on
--     pg_cron 1.5+), or until only c_catch_up_reserve of its budget is left. Not past it: pg_cron
--     does not start a job's run while its previous run is still active (with the CALL staying
--     0.5 s past the minute, pg_cron 1.4 ran it only about one minute in three), and the calls
--     due between this CALL's end and the next one's first cycle wait for that cycle: on pg_cron 1.5+ it holds its job slot between runs, which is the
--     price of the precision (wake_at_deadline = false gives the slot back, docs/scheduling.md).
--     The stale-Answered phase, the retries of quarantined calls, and calls a cycle left (row-
--     locked, a full batch, committed late with an old started_at) keep the polling ticks.
--   * Pause: before every tick, and after every nap while it waits, it re-reads
--     messenger.call_reaper_settings.paused (messenger.pause_call_reaper()) and wake_at_deadline;
--     paused, it returns at once, so a pause takes effect at the next tick, never after the
--     minute, and the wake is turned on or off within a nap.
--   * It waits in naps of at most 0.1 s, each its own transaction: a sleeping statement holds
--     a snapshot, and a snapshot a second old keeps every row closed in that second from being
--     pruned or marked dead in the indexes (a drain then walked 82 instead of 30 buffers per
--     closed call, docs/design.md). tests/python/test_snapshot_horizon.py holds it to that.
--   * Retention is not its business: the deployer's job messenger-call-reaper-purge runs it,
--     so the job role needs no right to delete history.
--   * Catch-up: a cycle that closed a full batch_size in either phase may have left due calls
--     behind (a failover, a restart, a resumed pause, a cycle that ran long). The tick then
--     runs another cycle at once, each its own transaction, until one closes less than a full
--     batch, so a gap costs one tick, not one tick per batch. It stops early after c_max_run
--     (30 s) of catch-up in one tick, when less than c_catch_up_reserve (5 s, the target cycle
--     duration) of the CALL's statement_timeout budget is left, or when a cycle is skipped
--     (the lock holder is doing the work) or rolled back; the next tick carries on. A catch-up cycle
--     still running when the budget runs out is cancelled and rolls back whole, the cycles
--     before it stay committed. Logged as event=caught_up.
--   * as_of (tests, a DBA): run one tick now with reap_call_timeouts(as_of => as_of), its
--     catch-up included, and return; like reap_call_timeouts by hand it runs even while the
--     reaper is paused. NULL (what the job passes) is the schedule above.
--
-- statement_timeout: on PostgreSQL a CALL's statement_timeout covers the whole CALL, COMMITs
-- included, and a running statement cannot re-arm it. The job role's 30 s (the max run
-- duration) would cancel a minute of ticks at 30 s, so on pg_cron 1.4 cron/call_reaper sets
-- statement_timeout = 90s for messenger_call_reaper in this database: one minute of ticks plus
-- one full max run duration. The per-tick guarantee is kept here: a tick is only started while
-- at least 30 s of the CALL's budget remain, so every cycle gets its full 30 s and the CALL is
-- never cancelled because of the loop itself (the first tick always runs). The budget does not
-- bound a single cycle to 30 s (a CALL's timer cannot be re-armed): the lock warden
-- (run_call_reaper_warden) cancels any scheduled cycle after 30 s, first tick included, and it
-- rolls back whole. When the budget is too short for the remaining ticks it logs a WARNING
-- (event=ticks_cut_short) and returns; the next minute's run carries on.
--
-- SECURITY INVOKER with no SET clause: a procedure with a SET clause cannot COMMIT. It runs as
-- the job role, which may EXECUTE the SECURITY DEFINER reaper and call_reaper_next_deadline,
-- read polling_interval, paused, batch_size and wake_at_deadline, and its own job's recorded
-- schedule -- nothing of pg_cron.
CREATE OR REPLACE PROCEDURE messenger.run_call_reaper_ticks(as_of timestamptz DEFAULT NULL)
LANGUAGE plpgsql
AS $$
DECLARE
    c_max_run  constant interval := interval '30 seconds';
    c_catch_up_reserve constant interval := interval '5 seconds';
    c_deadline_gap constant interval := interval '20 milliseconds';
    c_handover constant interval := interval '100 milliseconds';
    v_started  constant timestamptz := clock_timestamp();
    v_interval interval;
    v_version  integer[];
    v_once     boolean;
    v_wake     boolean;
    v_paused   boolean;
    v_budget   interval;
    v_tick     timestamptz;
    v_end      timestamptz;
    v_at       timestamptz;   -- what the wait is for: the tick, or a deadline before it
    v_until    timestamptz;   -- with no tick left, how long deadlines are still waited for
    v_next     timestamptz;
    v_done     timestamptz := '-infinity'::timestamptz;
    v_wait     numeric;
    v_ran      boolean := false;
    v_batch    integer;
    v_cycle    messenger.call_reaper_cycle;
    v_cycles   integer;
    v_closed   bigint;
    v_tick_run timestamptz;
BEGIN
    SELECT s.polling_interval, s.batch_size INTO STRICT v_interval, v_batch
      FROM messenger.call_reaper_settings AS s;
    IF run_call_reaper_ticks.as_of IS NULL THEN
        SELECT r.schedule ~ 'second' INTO v_once FROM messenger.call_reaper_cron_jobs AS r WHERE r.kind = 'reaper';
    END IF;
    IF v_once IS NULL THEN
        SELECT string_to_array(split_part(e.extversion, '-', 1), '.')::integer[] INTO v_version
          FROM pg_catalog.pg_extension AS e WHERE e.extname = 'pg_cron';
        v_once := v_version >= ARRAY[1, 5];
    END IF;
    -- pg_settings.setting is in milliseconds; 0 means no statement_timeout at all.
    SELECT nullif(g.setting::bigint, 0) * interval '1 millisecond' INTO v_budget
      FROM pg_catalog.pg_settings AS g
     WHERE g.name = 'statement_timeout';

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
            SELECT s.paused, s.wake_at_deadline AND run_call_reaper_ticks.as_of IS NULL INTO v_paused, v_wake
              FROM messenger.call_reaper_settings AS s;
            IF coalesce(v_paused, true) AND run_call_reaper_ticks.as_of IS NULL THEN
                RAISE LOG 'call_reaper event=ticks_stopped reason=paused';
                RETURN;
            END IF;
            COMMIT;
            v_at := CASE WHEN v_tick < v_end THEN v_tick END;
            v_until := NULL;
            -- Not after a skipped cycle: the lock's holder (a DBA's drain) closes them, and each
            -- deadline would add a skipped run to the ledger; the next tick looks again.
            IF v_wake AND v_cycle.result IN ('completed', 'failed') THEN
                -- Deadlines are waited for until the next CALL takes over and while a cycle has
                -- its reserve of the CALL's budget (waiting past it would be cancelled).
                v_until := least(v_end - c_handover, v_started + v_budget - c_catch_up_reserve);
                v_next := messenger.call_reaper_next_deadline(v_cycle.as_of);
                IF v_next < v_until THEN
                    v_at := least(v_at, greatest(v_next, v_done + c_deadline_gap));
                END IF;
            END IF;
            v_wait := extract(epoch FROM coalesce(v_at, v_until) - clock_timestamp());
            IF v_wait IS NULL OR v_wait <= 0 THEN
                EXIT WHEN v_at IS NOT NULL;
                RETURN;
            END IF;
            PERFORM pg_catalog.pg_sleep(least(v_wait, 0.1));
        END LOOP;

        -- The first tick always runs: the CALL's own budget is then exactly that cycle's.
        IF v_at = v_tick AND v_ran AND v_budget IS NOT NULL AND clock_timestamp() + c_max_run > v_started + v_budget THEN
            RAISE WARNING 'call_reaper event=ticks_cut_short tick=% statement_timeout=% hint=%', v_tick, v_budget,
                'on pg_cron 1.4 messenger_call_reaper needs statement_timeout >= 90s in this database';
            RETURN;
        END IF;

        v_tick_run := clock_timestamp();
        v_cycles := 0;
        v_closed := 0;
        LOOP
            v_cycle := messenger._reap_cycle(NULL, NULL, NULL, run_call_reaper_ticks.as_of, v_cycle.run_id);
            COMMIT;
            v_ran := true;
            v_cycles := v_cycles + 1;
            v_closed := v_closed + v_cycle.missed_count + v_cycle.failed_count;
            EXIT WHEN v_cycle.result <> 'completed'
                   OR greatest(v_cycle.missed_count, v_cycle.failed_count) < v_batch
                   OR clock_timestamp() >= v_tick_run + c_max_run
                   OR (v_budget IS NOT NULL AND clock_timestamp() + c_catch_up_reserve > v_started + v_budget);
        END LOOP;
        v_done := clock_timestamp();
        IF v_cycles > 1 THEN
            RAISE LOG 'call_reaper event=caught_up tick=% cycles=% closed=% last_result=% seconds=%',
                to_json(v_at) #>> '{}', v_cycles, v_closed, v_cycle.result,
                round(extract(epoch FROM v_done - v_tick_run)::numeric, 3);
        END IF;

        IF v_at = v_tick THEN
            v_tick := v_tick + v_interval;
            WHILE v_tick + v_interval <= clock_timestamp() AND v_tick < v_end LOOP
                v_tick := v_tick + v_interval;
            END LOOP;
        END IF;
    END LOOP;
END
$$;

COMMENT ON PROCEDURE messenger.run_call_reaper_ticks(timestamptz) IS
$$What the pg_cron job messenger-call-timeout-reaper CALLs: one reaper cycle per polling_interval tick, COMMIT after each (a minute schedule, pg_cron 1.4: the ticks of the current minute; a schedule in seconds, 1.5+: one cycle). Between ticks, with wake_at_deadline, also a cycle at each Ringing call's deadline (messenger.call_reaper_next_deadline), until the next CALL is due. A cycle that closed a full batch is followed at once by another (catch-up, at most 30 s per tick). Stops at the next tick once the reaper is paused (messenger.pause_call_reaper()). CALL messenger.run_call_reaper_ticks(as_of => ...) runs one tick with that as_of, paused or not.$$;

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
