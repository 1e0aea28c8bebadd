-- Deploy call_timeout_reaper:functions/_check_reaper_duration to pg

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
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER FUNCTION messenger._check_reaper_duration(text, interval, interval, interval)
    OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;

COMMIT;
