-- Deploy call_timeout_reaper:functions/_check_reaper_options to pg

BEGIN;

-- Contract: raises SQLSTATE 22023 (invalid_parameter_value) naming the first bad option, else
-- returns nothing. One validator for the reaper's arguments and for stored settings, so "valid"
-- means one thing. NULL means "not given" and is not checked here (callers coalesce first).
-- Upper bounds exist so `as_of - timeout` can never overflow and a typo ('2000 hours') is
-- refused rather than silently disabling a phase.
CREATE OR REPLACE FUNCTION messenger._check_reaper_options(
    batch_size    integer,
    ring_timeout  interval,
    stale_timeout interval,
    as_of         timestamptz DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF batch_size NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'batch_size must be between 1 and 10000, got %', batch_size
            USING ERRCODE = '22023', HINT = 'The default is 200 calls per phase per cycle.';
    END IF;
    IF ring_timeout <= interval '0' OR ring_timeout > interval '1 day' THEN
        RAISE EXCEPTION 'ring_timeout must be greater than 0 and at most 1 day, got %', ring_timeout
            USING ERRCODE = '22023', HINT = 'The default is 45 seconds.';
    END IF;
    IF stale_timeout <= interval '0' OR stale_timeout > interval '30 days' THEN
        RAISE EXCEPTION 'stale_timeout must be greater than 0 and at most 30 days, got %', stale_timeout
            USING ERRCODE = '22023', HINT = 'The default is 2 hours.';
    END IF;
    -- The epoch itself is the classic unset value (to_timestamp(0)). Past year 9999 the
    -- ended_at/created_at the cycle writes are unreadable for most clients (Python's datetime
    -- stops there), and near the end of the range as_of + poison backoff overflows.
    IF NOT isfinite(as_of) OR as_of <= timestamptz '1970-01-01 00:00:00+00'
       OR as_of >= timestamptz '10000-01-01 00:00:00+00' THEN
        RAISE EXCEPTION 'as_of must be a finite time after 1970-01-01 and before year 10000, got %', as_of
            USING ERRCODE = '22023', HINT = 'Omit as_of (or pass NULL) to use the current time.';
    END IF;
END
$$;

COMMENT ON FUNCTION messenger._check_reaper_options(integer, interval, interval, timestamptz) IS
    'Private: validates reaper options; raises SQLSTATE 22023 naming the bad option.';
REVOKE ALL ON FUNCTION messenger._check_reaper_options(integer, interval, interval, timestamptz) FROM PUBLIC;
ALTER FUNCTION messenger._check_reaper_options(integer, interval, interval, timestamptz)
    OWNER TO messenger_call_reaper_owner;

COMMIT;
