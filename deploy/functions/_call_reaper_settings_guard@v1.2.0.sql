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
-- polling_interval reschedules the job in the same transaction (cron.alter_job: the updating
-- role must be a superuser or own the job, as for any change to it). On 1.4 the job re-reads
-- the setting at every minute's CALL and nothing is rescheduled.
-- Not SECURITY DEFINER: it runs as the role that changes the settings.
CREATE OR REPLACE FUNCTION messenger._call_reaper_settings_guard()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_seconds numeric;
    v_version integer[];
    v_jobid   bigint;
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
        SELECT string_to_array(split_part(e.extversion, '-', 1), '.')::integer[] INTO v_version
          FROM pg_catalog.pg_extension AS e WHERE e.extname = 'pg_cron';
        IF v_version >= ARRAY[1, 5] THEN
            SELECT j.jobid INTO v_jobid
              FROM cron.job AS j
             WHERE j.jobname = 'messenger-call-timeout-reaper' AND j.username = 'messenger_call_reaper';
            IF v_jobid IS NOT NULL THEN
                -- Same rule as cron/call_reaper: a whole minute is the classic schedule.
                PERFORM cron.alter_job(v_jobid, schedule => CASE WHEN v_seconds < 60
                                                                 THEN format('%s seconds', v_seconds::integer)
                                                                 ELSE '* * * * *' END);
                RAISE LOG 'call_reaper event=job_rescheduled polling_interval=%', NEW.polling_interval;
            END IF;
        END IF;
    END IF;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION messenger._call_reaper_settings_guard() IS
    'Private: validates every change to messenger.call_reaper_settings (SQLSTATE 22023) and keeps its one row (SQLSTATE 55000).';
REVOKE ALL ON FUNCTION messenger._call_reaper_settings_guard() FROM PUBLIC;

COMMIT;
