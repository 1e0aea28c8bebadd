-- Deploy call_timeout_reaper:procedures/run_call_reaper_ticks to pg

BEGIN;

-- messenger.run_call_reaper_ticks()
--
-- What the pg_cron job `messenger-call-timeout-reaper` CALLs. It runs one reaper cycle
-- (messenger.reap_call_timeouts with the configured options) at each polling_interval tick and
-- COMMITs after each, so every cycle is its own transaction and holds the single-runner lock
-- only while it runs.
--   * pg_cron 1.4 (schedule '* * * * *', no sub-minute schedules): one CALL per minute runs the
--     ticks minute + k * polling_interval that are still ahead or due, sleeping in between.
--     A tick already a whole interval late is dropped, not run twice in a row.
--   * pg_cron 1.5+ (native schedule 'N seconds'): one CALL runs exactly one cycle, now. The
--     version comes from pg_extension: the job role has no access to schema cron.
--   * Pause: before every tick, and every second while it sleeps, it re-reads
--     messenger.call_reaper_settings.paused (messenger.pause_call_reaper()); paused, it returns
--     at once, so a pause takes effect at the next tick, never after the minute.
--   * Retention is not its business: the deployer's job messenger-call-reaper-purge runs it,
--     so the job role needs no right to delete history.
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
-- the job role, which may EXECUTE the SECURITY DEFINER reaper and read polling_interval and
-- paused -- nothing of pg_cron.
CREATE OR REPLACE PROCEDURE messenger.run_call_reaper_ticks()
LANGUAGE plpgsql
AS $$
DECLARE
    c_max_run  constant interval := interval '30 seconds';
    v_started  constant timestamptz := clock_timestamp();
    v_interval interval;
    v_version  integer[];
    v_paused   boolean;
    v_budget   interval;
    v_tick     timestamptz;
    v_end      timestamptz;
    v_wait     numeric;
    v_ran      boolean := false;
BEGIN
    SELECT s.polling_interval INTO STRICT v_interval FROM messenger.call_reaper_settings AS s;
    SELECT string_to_array(split_part(e.extversion, '-', 1), '.')::integer[] INTO v_version
      FROM pg_catalog.pg_extension AS e WHERE e.extname = 'pg_cron';
    -- pg_settings.setting is in milliseconds; 0 means no statement_timeout at all.
    SELECT nullif(g.setting::bigint, 0) * interval '1 millisecond' INTO v_budget
      FROM pg_catalog.pg_settings AS g
     WHERE g.name = 'statement_timeout';

    IF v_version >= ARRAY[1, 5] THEN
        v_tick := v_started;
        v_end := v_started + v_interval;
    ELSE
        v_end := date_trunc('minute', v_started) + interval '1 minute';
        v_tick := date_trunc('minute', v_started)
                  + v_interval * floor(extract(epoch FROM v_started - date_trunc('minute', v_started))
                                       / extract(epoch FROM v_interval));
    END IF;

    WHILE v_tick < v_end LOOP
        LOOP
            SELECT s.paused INTO v_paused FROM messenger.call_reaper_settings AS s;
            IF coalesce(v_paused, true) THEN
                RAISE LOG 'call_reaper event=ticks_stopped reason=paused';
                RETURN;
            END IF;
            COMMIT;
            v_wait := extract(epoch FROM v_tick - clock_timestamp());
            EXIT WHEN v_wait <= 0;
            PERFORM pg_catalog.pg_sleep(least(v_wait, 1));
        END LOOP;

        -- The first tick always runs: the CALL's own budget is then exactly that cycle's.
        IF v_ran AND v_budget IS NOT NULL AND clock_timestamp() + c_max_run > v_started + v_budget THEN
            RAISE WARNING 'call_reaper event=ticks_cut_short tick=% statement_timeout=% hint=%', v_tick, v_budget,
                'on pg_cron 1.4 messenger_call_reaper needs statement_timeout >= 90s in this database';
            RETURN;
        END IF;

        PERFORM messenger.reap_call_timeouts();
        COMMIT;
        v_ran := true;

        v_tick := v_tick + v_interval;
        WHILE v_tick + v_interval <= clock_timestamp() AND v_tick < v_end LOOP
            v_tick := v_tick + v_interval;
        END LOOP;
    END LOOP;
END
$$;

COMMENT ON PROCEDURE messenger.run_call_reaper_ticks() IS
$$What the pg_cron job messenger-call-timeout-reaper CALLs: one reaper cycle per polling_interval tick, COMMIT after each (pg_cron 1.4: the ticks of the current minute; 1.5+: one cycle). Stops at the next tick once the reaper is paused (messenger.pause_call_reaper()).$$;

REVOKE ALL ON PROCEDURE messenger.run_call_reaper_ticks() FROM PUBLIC;
ALTER PROCEDURE messenger.run_call_reaper_ticks() OWNER TO messenger_call_reaper_owner;
GRANT EXECUTE ON PROCEDURE messenger.run_call_reaper_ticks() TO messenger_call_reaper;
-- The procedure runs as the job role and needs the interval it ticks at and the pause flag,
-- nothing else of the row.
GRANT SELECT (polling_interval, paused) ON messenger.call_reaper_settings TO messenger_call_reaper;

COMMIT;
