-- Deploy call_timeout_reaper:functions/_call_reaper_settings_guard to pg

BEGIN;

-- messenger._call_reaper_settings_guard()  (trigger function of messenger.call_reaper_settings)
--
-- Contract: a new or changed settings row is stored only if every option is valid, and the row
-- is never removed.
--   - DELETE and TRUNCATE raise SQLSTATE 55000: the reaper and the job read this one row.
--   - batch_size, ring_timeout and stale_timeout follow messenger._check_reaper_options, every
--     other duration messenger._check_reaper_duration (hours, minutes and seconds only, within
--     its bounds), so a stored option obeys the same rules as the reaper's arguments.
--   - polling_interval must be a whole number of seconds dividing 60: the job runs one cycle at
--     each tick of the minute (pg_cron 1.4 has no sub-minute schedule), and ticks only line up
--     with the minute for such a value. Refused when set, not found by a failing job.
--   - No option may be NULL: the column's NOT NULL constraint is checked only after this
--     trigger, with 23502 and the whole row in its DETAIL; a bad setting is 22023 like any other.
--   Any refusal raises SQLSTATE 22023 naming the option; the statement changes nothing.
-- On pg_cron 1.5+ the job runs on a native '<n> seconds' schedule, so an UPDATE that changes
-- polling_interval reschedules the job in the same transaction. The job is messenger_call_reaper's
-- and pg_cron lets only a superuser or a job's owner change it (its row-level security even hides
-- it from anyone else, so a reschedule by the deployer would silently do nothing): the job role
-- reschedules its own job by name (cron.schedule, in place), inside this transaction, with the
-- passing grant of cron/call_reaper. The updating role therefore needs what the deploy needs:
-- membership in messenger_call_reaper and USAGE on schema cron WITH GRANT OPTION; without them
-- the UPDATE is refused with 42501 and changes nothing. Where the job is kept in another database
-- (messenger.call_reaper_cron_jobs: cron_database is not this one) it cannot be reached from here
-- without dblink: on pg_cron 1.5+ such an UPDATE is refused with 55000 (HINT: how to change it);
-- on 1.4 the job re-reads the setting at every minute's CALL and nothing is rescheduled, here or
-- there. Logged as event=job_rescheduled.
-- Not SECURITY DEFINER: it runs as the role that changes the settings.
CREATE OR REPLACE FUNCTION messenger._call_reaper_settings_guard()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_seconds numeric;
    v_version integer[];
    v_job      messenger.call_reaper_cron_jobs;
    v_schedule text;
    v_me       name := current_user;
    v_null    text;
BEGIN
    IF TG_OP IN ('DELETE', 'TRUNCATE') THEN
        RAISE EXCEPTION 'messenger.call_reaper_settings must keep its one row'
            USING ERRCODE = '55000', HINT = 'UPDATE the option instead.';
    END IF;
    -- Every column, so an option added later is covered without a change here.
    SELECT a.attname::text INTO v_null
      FROM pg_catalog.jsonb_each(pg_catalog.to_jsonb(NEW)) AS j
      JOIN pg_catalog.pg_attribute AS a ON a.attrelid = TG_RELID AND a.attname = j.key
     WHERE j.value = 'null'::jsonb
     ORDER BY a.attnum
     LIMIT 1;
    IF v_null IS NOT NULL THEN
        RAISE EXCEPTION '% must not be NULL', v_null
            USING ERRCODE = '22023',
                  HINT = pg_catalog.format('Set a value, or the default: UPDATE messenger.call_reaper_settings SET %I = DEFAULT.', v_null);
    END IF;
    PERFORM messenger._check_reaper_options(NEW.batch_size, NEW.ring_timeout, NEW.stale_timeout);
    PERFORM messenger._check_reaper_duration('polling_interval', NEW.polling_interval,
                                             interval '1 second', interval '1 hour');
    PERFORM messenger._check_reaper_duration('lock_ttl', NEW.lock_ttl,
                                             interval '1 second', interval '1 hour');
    PERFORM messenger._check_reaper_duration('poison_backoff_max', NEW.poison_backoff_max,
                                             interval '0.000001 seconds', interval '168 hours');
    PERFORM messenger._check_reaper_duration('poison_backoff', NEW.poison_backoff,
                                             interval '0.000001 seconds', NEW.poison_backoff_max);
    PERFORM messenger._check_reaper_duration('retention', NEW.retention,
                                             interval '1 hour', interval '87600 hours');

    v_seconds := extract(epoch FROM NEW.polling_interval);
    IF v_seconds <> trunc(v_seconds) OR v_seconds NOT BETWEEN 1 AND 60
       OR 60 % v_seconds::integer <> 0 THEN
        RAISE EXCEPTION 'polling_interval must be a whole number of seconds that divides 60, got %',
            NEW.polling_interval
            USING ERRCODE = '22023',
                  DETAIL = 'The scheduled job runs one cycle at each tick of the minute.',
                  HINT = 'Use one of 1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30 or 60 seconds; the default is 15 seconds.';
    END IF;

    IF TG_OP = 'UPDATE' AND NEW.polling_interval IS DISTINCT FROM OLD.polling_interval THEN
        SELECT r.* INTO v_job FROM messenger.call_reaper_cron_jobs AS r WHERE r.kind = 'reaper';
        v_version := string_to_array(split_part(v_job.cron_version, '-', 1), '.')::integer[];
        IF v_job.kind IS NOT NULL AND v_version >= ARRAY[1, 5] THEN
            -- Same rule as cron/call_reaper: a whole minute is the classic schedule.
            v_schedule := CASE WHEN v_seconds < 60 THEN format('%s seconds', v_seconds::integer) ELSE '* * * * *' END;
            IF v_job.cron_database <> pg_catalog.current_database() THEN
                RAISE EXCEPTION 'polling_interval cannot reschedule the job %, kept in database %',
                    v_job.jobname, v_job.cron_database
                    USING ERRCODE = '55000',
                          DETAIL = 'pg_cron 1.5+ runs the job on its own schedule, and this database cannot reach the cron database.',
                          HINT = 'The schedule is set by the deploy there: sqitch revert --to tables/call_reaper_cron_jobs, this UPDATE, then sqitch deploy with the same --set options (README "Server settings").';
            END IF;
            BEGIN
                GRANT USAGE ON SCHEMA cron TO messenger_call_reaper;
                SET LOCAL ROLE messenger_call_reaper;
                PERFORM cron.schedule(v_job.jobname, v_schedule, 'CALL messenger.run_call_reaper_ticks()');
                EXECUTE format('SET LOCAL ROLE %I', v_me);
                REVOKE USAGE ON SCHEMA cron FROM messenger_call_reaper;
            EXCEPTION WHEN insufficient_privilege THEN
                RAISE EXCEPTION 'role % cannot reschedule the job %', v_me, v_job.jobname
                    USING ERRCODE = '42501',
                          DETAIL = pg_catalog.format('The job belongs to messenger_call_reaper, which reschedules it itself: %s', SQLERRM),
                          HINT = 'Change polling_interval as the deploying role (a member of messenger_call_reaper with USAGE on schema cron WITH GRANT OPTION).';
            END;
            UPDATE messenger.call_reaper_cron_jobs SET schedule = v_schedule WHERE kind = 'reaper';
            RAISE LOG 'call_reaper event=job_rescheduled polling_interval=% schedule=%', NEW.polling_interval, to_json(v_schedule);
        END IF;
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION messenger._call_reaper_settings_guard() IS
    'Private: validates every change to messenger.call_reaper_settings (SQLSTATE 22023) and keeps its one row (SQLSTATE 55000).';
REVOKE ALL ON FUNCTION messenger._call_reaper_settings_guard() FROM PUBLIC;

COMMIT;
