-- Deploy call_timeout_reaper:functions/_check_reaper_options to pg

BEGIN;

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
-- The new owner must be able to create in the schema, which the owner role may not: a grant
-- for this statement only (a superuser deployer needs none; no other session sees it).
GRANT CREATE ON SCHEMA messenger TO messenger_call_reaper_owner;
ALTER FUNCTION messenger._check_reaper_options(integer, interval, interval, timestamptz)
    OWNER TO messenger_call_reaper_owner;
REVOKE CREATE ON SCHEMA messenger FROM messenger_call_reaper_owner;

COMMIT;
