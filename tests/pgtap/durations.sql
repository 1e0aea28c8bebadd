-- Durations are durations: every interval option, as an argument or a stored setting, must be a
-- fixed length of time (no month or day part), so `as_of - timeout` is the same length on every
-- date and in every time zone. Refused with 22023 otherwise, changing nothing.
BEGIN;
SELECT plan(23);

-- Issue 10, reproduction 1a: '1 mon -29 days' normalises to +1 day, but on 2027-03-01 (after a
-- 28-day February) as_of minus it lies a day in the FUTURE.
SET LOCAL TimeZone = 'UTC';
SELECT ok(timestamptz '2027-03-01 12:00+00' - interval '1 mon -29 days' > timestamptz '2027-03-01 12:00+00',
          'the hazard is real: 2027-03-01 12:00 UTC minus ''1 mon -29 days'' is a future cutoff');
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
VALUES ('00000000-0000-0000-0000-0000000000a1', gen_random_uuid(), gen_random_uuid(), 'Audio', 'Answered',
        '2027-03-01 11:00+00', '2027-03-01 11:00+00', '2027-03-01 11:59+00');
SELECT throws_ok($$SELECT messenger.reap_call_timeouts(stale_timeout => '1 mon -29 days', as_of => '2027-03-01 12:00+00')$$,
    '22023', NULL, 'stale_timeout ''1 mon -29 days'' is refused');
SELECT is((SELECT status FROM messenger.call_sessions WHERE call_id = '00000000-0000-0000-0000-0000000000a1'),
          'Answered', 'the answered call with progress a minute ago stays Answered');
SELECT throws_ok($$UPDATE messenger.call_reaper_settings SET stale_timeout = '1 mon -29 days'$$,
    '22023', NULL, 'stale_timeout ''1 mon -29 days'' cannot be stored either');

-- Reproduction 1b: '1 day -86355 seconds' is +45 s after normalisation, but across Berlin's
-- spring-forward day (2027-03-28, 23 hours) as_of minus it is an hour in the future.
SET LOCAL TimeZone = 'Europe/Berlin';
SELECT ok(timestamptz '2027-03-28 12:00+02' - interval '1 day -86355 seconds' > timestamptz '2027-03-28 12:00+02',
          'the hazard is real: on 2027-03-28 in Europe/Berlin ''1 day -86355 seconds'' gives a future cutoff');
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
VALUES ('00000000-0000-0000-0000-0000000000b1', gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing',
        '2027-03-28 11:59:50+02', NULL, '2027-03-28 11:59:50+02');
SELECT throws_ok($$SELECT messenger.reap_call_timeouts(ring_timeout => '1 day -86355 seconds', as_of => '2027-03-28 12:00+02')$$,
    '22023', NULL, 'ring_timeout ''1 day -86355 seconds'' is refused');
SELECT is((SELECT status FROM messenger.call_sessions WHERE call_id = '00000000-0000-0000-0000-0000000000b1'),
          'Ringing', 'the call that started 10 s ago is still Ringing');
SELECT throws_ok($$UPDATE messenger.call_reaper_settings SET ring_timeout = '1 day -86355 seconds'$$,
    '22023', NULL, 'ring_timeout ''1 day -86355 seconds'' cannot be stored either');

-- '-1 mon +31 days' (a month and a day part of opposite signs) for every duration option.
SELECT throws_ok($$SELECT messenger.reap_call_timeouts(ring_timeout => '-1 mon +31 days', as_of => '2027-03-28 12:00+02')$$,
    '22023', NULL, 'ring_timeout ''-1 mon +31 days'' is refused as an argument');
SELECT throws_ok($$SELECT messenger.reap_call_timeouts(stale_timeout => '-1 mon +31 days', as_of => '2027-03-28 12:00+02')$$,
    '22023', NULL, 'stale_timeout ''-1 mon +31 days'' is refused as an argument');
SELECT throws_ok($$SELECT * FROM messenger.preview_call_timeouts(stale_timeout => '-1 mon +31 days', as_of => '2027-03-28 12:00+02')$$,
    '22023', NULL, 'the preview applies the same rule');
SELECT throws_ok($$UPDATE messenger.call_reaper_settings SET polling_interval = '-1 mon +31 days'$$,
    '22023', NULL, 'polling_interval ''-1 mon +31 days'' cannot be stored');
SELECT throws_ok($$UPDATE messenger.call_reaper_settings SET lock_ttl = '-1 mon +31 days'$$,
    '22023', NULL, 'lock_ttl ''-1 mon +31 days'' cannot be stored');
SELECT throws_ok($$UPDATE messenger.call_reaper_settings SET poison_backoff_max = '-1 mon +31 days'$$,
    '22023', NULL, 'poison_backoff_max ''-1 mon +31 days'' cannot be stored');
SELECT throws_ok($$UPDATE messenger.call_reaper_settings SET poison_backoff = '-1 mon +31 days'$$,
    '22023', NULL, 'poison_backoff ''-1 mon +31 days'' cannot be stored');
SELECT throws_ok($$UPDATE messenger.call_reaper_settings SET retention = '-1 mon +31 days'$$,
    '22023', NULL, 'retention ''-1 mon +31 days'' cannot be stored');
SELECT throws_ok($$UPDATE messenger.call_reaper_settings SET retention = '7 days'$$,
    '22023', NULL, 'a plain ''7 days'' is refused too: a day is not always 24 hours');

-- DST days of a few zones: '1 day' is 23 or 25 hours there, so it is refused; '24 hours' is
-- exactly 24 hours everywhere. A call that started 24 h before as_of is due, one 1 s later not
-- (statuses read right after each zone's cycle: a later as_of would close the early call too).
CREATE TEMP TABLE dst (zone text, as_of text);
INSERT INTO dst VALUES ('America/New_York', '2027-03-14 12:00'), ('Europe/London', '2027-10-31 12:00'),
                       ('Australia/Sydney', '2027-04-04 12:00');
CREATE TEMP TABLE dst_result (zone text, one_day_refused boolean, statuses text[]);
DO $$
DECLARE
    d record;
    v_as_of timestamptz;
    v_due uuid := gen_random_uuid();
    v_early uuid := gen_random_uuid();
    v_refused boolean := false;
BEGIN
    FOR d IN SELECT * FROM dst LOOP
        PERFORM set_config('TimeZone', d.zone, true);
        v_as_of := d.as_of::timestamptz;
        v_due := gen_random_uuid();
        v_early := gen_random_uuid();
        INSERT INTO messenger.call_sessions
               (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
        VALUES (v_due, gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing',
                v_as_of - interval '24 hours', NULL, v_as_of - interval '24 hours'),
               (v_early, gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing',
                v_as_of - interval '23:59:59', NULL, v_as_of - interval '23:59:59');
        BEGIN
            PERFORM messenger.reap_call_timeouts(ring_timeout => '1 day', as_of => v_as_of);
            v_refused := false;
        EXCEPTION WHEN invalid_parameter_value THEN
            v_refused := true;
        END;
        PERFORM messenger.reap_call_timeouts(ring_timeout => '24 hours', as_of => v_as_of);
        INSERT INTO dst_result
        SELECT d.zone, v_refused,
               ARRAY[(SELECT c.status FROM messenger.call_sessions AS c WHERE c.call_id = v_due),
                     (SELECT c.status FROM messenger.call_sessions AS c WHERE c.call_id = v_early)];
    END LOOP;
END
$$;
SET LOCAL TimeZone = 'UTC';
SELECT ok(d.one_day_refused, format('ring_timeout ''1 day'' is refused on the DST day of %s', d.zone))
  FROM dst_result AS d ORDER BY d.zone;
SELECT is(array_agg(d.statuses ORDER BY d.zone),
          ARRAY[ARRAY['Missed', 'Ringing'], ARRAY['Missed', 'Ringing'], ARRAY['Missed', 'Ringing']],
          '''24 hours'' is exactly 24 hours on each DST day: due at 24 h, not at 23:59:59')
  FROM dst_result AS d;
SELECT throws_ok($$UPDATE messenger.call_reaper_settings SET ring_timeout = '1 day'$$,
    '22023', NULL, 'ring_timeout ''1 day'' cannot be stored');

-- What a DBA may write: hours, minutes, seconds, any spelling.
SELECT lives_ok($$UPDATE messenger.call_reaper_settings
                     SET ring_timeout = '24 hours', stale_timeout = '720:00:00', retention = '168 hours',
                         lock_ttl = '00:01:00', poison_backoff_max = '168 hours'$$,
    'hours, minutes and seconds are stored, in any spelling and up to the bounds');

SELECT * FROM finish();
ROLLBACK;
