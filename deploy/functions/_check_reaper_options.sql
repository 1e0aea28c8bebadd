-- Deploy call_timeout_reaper:functions/_check_reaper_options to pg

BEGIN;

-- messenger._check_reaper_duration(option, value, lowest, highest)
--
-- Contract: the one rule for every duration the reaper takes (ring_timeout, stale_timeout,
-- polling_interval, lock_ttl, poison backoffs, retention), as an argument or a stored setting.
-- A duration must be a fixed length of time: its month and day fields must be 0, so it is
-- written in hours, minutes and seconds ('45 seconds', '2 hours', '168 hours', '00:01:00').
-- Why: `as_of - interval` is calendar arithmetic in the session's TimeZone. A day is 23 or 25
-- hours across a DST change and a month 28..31 days, so '1 day -86355 seconds' or
-- '1 mon -29 days' look positive after normalisation yet put the cutoff in the future on some
-- dates; and a plain '1 day' is not 24 hours twice a year. An interval with only the time
-- field is a count of microseconds: the same length on every date, in every zone.
-- Raises SQLSTATE 22023 naming the option when the value has a month or day field, or lies
-- outside [lowest, highest]; NULL is "not given" and passes (callers coalesce first).
CREATE OR REPLACE FUNCTION messenger._check_reaper_duration(
    option  text,
    value   interval,
    lowest  interval,
    highest interval)
RETURNS void
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- extract(year/month) split the month field; day is its own field, never normalised.
    IF extract(year FROM value) <> 0 OR extract(month FROM value) <> 0
       OR extract(day FROM value) <> 0 THEN
        RAISE EXCEPTION '% must be a fixed length of time (hours, minutes, seconds), got %', option, value
            USING ERRCODE = '22023',
                  DETAIL = 'A month or day part makes the length depend on the date and the time zone (DST days are 23 or 25 hours).',
                  HINT = format('Write it in hours, minutes or seconds between %s and %s, e.g. ''24 hours'' instead of ''1 day''.',
                                lowest, highest);
    END IF;
    IF value < lowest OR value > highest THEN
        RAISE EXCEPTION '% must be between % and %, got %', option, lowest, highest, value
            USING ERRCODE = '22023';
    END IF;
END
$$;

COMMENT ON FUNCTION messenger._check_reaper_duration(text, interval, interval, interval) IS
    'Private: a reaper duration must have no month or day part and lie in [lowest, highest]; raises SQLSTATE 22023 naming the option.';
REVOKE ALL ON FUNCTION messenger._check_reaper_duration(text, interval, interval, interval) FROM PUBLIC;
ALTER FUNCTION messenger._check_reaper_duration(text, interval, interval, interval)
    OWNER TO messenger_call_reaper_owner;

-- messenger._check_reaper_options(batch_size, ring_timeout, stale_timeout, as_of)
--
-- Contract: raises SQLSTATE 22023 (invalid_parameter_value) naming the first bad option, else
-- returns nothing. One validator for the reaper's arguments and for stored settings, so "valid"
-- means one thing. NULL means "not given" and is not checked here (callers coalesce first).
-- Durations follow _check_reaper_duration. Upper bounds exist so `as_of - timeout` can never
-- overflow and a typo ('2000 hours') is refused rather than silently disabling a phase.
-- as_of may not lie more than 5 seconds (clock skew) past clock_timestamp(): a future as_of
-- closes live calls. Test clusters, which pass future times instead of sleeping, opt in with
-- settings.allow_future_as_of = true (scripts/test-in-cluster sets it after deploy). A setting,
-- not a session GUC: only a role that may UPDATE the settings (a DBA, never the job or monitor
-- role) can lift the bound, so a caller cannot lift it for itself. The scheduled job never
-- passes as_of.
CREATE OR REPLACE FUNCTION messenger._check_reaper_options(
    batch_size    integer,
    ring_timeout  interval,
    stale_timeout interval,
    as_of         timestamptz DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF batch_size NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'batch_size must be between 1 and 10000, got %', batch_size
            USING ERRCODE = '22023', HINT = 'The default is 200 calls per phase per cycle.';
    END IF;
    PERFORM messenger._check_reaper_duration('ring_timeout', ring_timeout,
                                             interval '0.000001 seconds', interval '24 hours');
    PERFORM messenger._check_reaper_duration('stale_timeout', stale_timeout,
                                             interval '0.000001 seconds', interval '720 hours');
    -- The epoch itself is the classic unset value (to_timestamp(0)). Past year 9999 the
    -- ended_at/created_at the cycle writes are unreadable for most clients (Python's datetime
    -- stops there), and near the end of the range as_of + poison backoff overflows.
    IF NOT isfinite(as_of) OR as_of <= timestamptz '1970-01-01 00:00:00+00'
       OR as_of >= timestamptz '10000-01-01 00:00:00+00' THEN
        RAISE EXCEPTION 'as_of must be a finite time after 1970-01-01 and before year 10000, got %', as_of
            USING ERRCODE = '22023', HINT = 'Omit as_of (or pass NULL) to use the current time.';
    END IF;
    IF as_of > clock_timestamp() + interval '5 seconds'
       AND NOT (SELECT s.allow_future_as_of FROM messenger.call_reaper_settings AS s) THEN
        RAISE EXCEPTION 'as_of must not be in the future, got % (now %)', as_of, clock_timestamp()
            USING ERRCODE = '22023',
                  DETAIL = 'A future as_of closes calls that are still live; 5 seconds of clock skew are tolerated.',
                  HINT = 'Omit as_of to use the current time. Test clusters opt in with UPDATE messenger.call_reaper_settings SET allow_future_as_of = true.';
    END IF;
END
$$;

COMMENT ON FUNCTION messenger._check_reaper_options(integer, interval, interval, timestamptz) IS
    'Private: validates reaper options; raises SQLSTATE 22023 naming the bad option.';
REVOKE ALL ON FUNCTION messenger._check_reaper_options(integer, interval, interval, timestamptz) FROM PUBLIC;
ALTER FUNCTION messenger._check_reaper_options(integer, interval, interval, timestamptz)
    OWNER TO messenger_call_reaper_owner;

COMMIT;
