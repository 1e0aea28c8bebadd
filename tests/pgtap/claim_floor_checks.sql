-- The claim floor hides no call: every cycle checks it before trusting it. After a poison flood
-- and a drain left floors behind, a TRUNCATE or a bulk DELETE of call_sessions, a repeated
-- as_of, and an as_of that goes back each make the next cycle walk from the start and close
-- every due call; the preview lists exactly what that cycle closes; quarantine rows whose call
-- is gone are not counted in the quarantine gauge and leave as their backoff expires.
BEGIN;
SELECT plan(12);
SET LOCAL client_min_messages = error;  -- the call_poisoned WARNINGs below are expected
\ir fixtures/poison_caller.sql

-- 40 poison calls, the oldest due ones, then 1 200 healthy ones behind them.
CREATE FUNCTION pg_temp.add_calls(p_from timestamptz, p_n integer, p_caller uuid DEFAULT NULL) RETURNS void
LANGUAGE sql AS $$
    INSERT INTO messenger.call_sessions
           (call_id, caller_user_id, callee_user_id, media_type, status, started_at, updated_at)
    SELECT gen_random_uuid(), coalesce(p_caller, gen_random_uuid()), gen_random_uuid(), 'Audio', 'Ringing',
           p_from + g * interval '1 second', p_from + g * interval '1 second'
      FROM generate_series(1, p_n) AS g
$$;
SELECT pg_temp.add_calls('2100-01-01 09:00+00', 40, '00000000-0000-0000-0000-00000000dead');
SELECT pg_temp.add_calls('2100-01-01 10:00+00', 1200);
CREATE FUNCTION pg_temp.cycles(p_n integer, p_from timestamptz) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    v_closed bigint := 0;
BEGIN
    FOR i IN 1 .. p_n LOOP
        v_closed := v_closed + (SELECT missed_count FROM messenger.reap_call_timeouts(
                                    batch_size => 100, as_of => p_from + i * interval '15 seconds'));
    END LOOP;
    RETURN v_closed;
END $$;
-- Twelve cycles 15 s apart: the flood is quarantined, then the drain's full lanes move the floor.
SELECT cmp_ok(pg_temp.cycles(12, '2100-01-01 12:00+00'), '>=', 800::bigint,
              'twelve cycles close most of the backlog beside the flood');
SELECT is((SELECT count(*)::integer FROM messenger.call_reaper_quarantine), 40, 'the 40 poison calls are quarantined');
SELECT ok(EXISTS (SELECT FROM messenger.call_reaper_claim_floor WHERE phase = 'ring_timeout'),
          'the drain left a ring-timeout floor');

-- TRUNCATE, then six due calls: three older than anything before, three inside the old backlog.
TRUNCATE messenger.call_sessions;
SELECT pg_temp.add_calls('2100-01-01 08:00+00', 3);
SELECT pg_temp.add_calls('2100-01-01 10:05+00', 3);
SELECT is((SELECT quarantined FROM messenger.call_reaper_metrics()), 0::bigint,
          'quarantine rows of calls that no longer exist are not counted');
CREATE TEMP TABLE t1 AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 100, as_of => '2100-01-01 12:04+00');
SELECT is((SELECT missed_count FROM t1), 6, 'after TRUNCATE the next cycle closes all six due calls');
SELECT is((SELECT count(*)::integer FROM messenger.call_reaper_quarantine), 32,
          'the retry lane deletes the quarantine rows of calls that are gone as their backoff expires, 8 a cycle');

-- A bulk DELETE of calls after another drain: the same.
SELECT pg_temp.add_calls('2100-01-01 10:00+00', 1200);
SELECT is(pg_temp.cycles(11, '2100-01-01 12:05+00'), 1100::bigint, 'a second drain closes 1 100 calls');
DELETE FROM messenger.call_sessions;
SELECT pg_temp.add_calls('2100-01-01 08:00+00', 3);
SELECT pg_temp.add_calls('2100-01-01 10:05+00', 3);
CREATE TEMP TABLE d1 AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 100, as_of => '2100-01-01 12:09+00');
SELECT is((SELECT missed_count FROM d1), 6, 'after a bulk DELETE the next cycle closes all six due calls');

-- A drain of 1 100 calls keeps its floor; calls written below it at that same as_of (a test, a
-- DBA repeating a cycle) are closed by a cycle at that as_of.
SELECT pg_temp.add_calls('2100-01-01 11:00+00', 1100);
SELECT is(pg_temp.cycles(12, '2100-01-01 12:10+00'), 1100::bigint, 'a third drain closes its 1 100 calls');
SELECT pg_temp.add_calls('2100-01-01 11:00:30+00', 3);
CREATE TEMP TABLE a1 AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 100, as_of => '2100-01-01 12:13+00');
SELECT is((SELECT missed_count FROM a1), 3, 'at the floor''s own as_of the cycle walks from the start');

-- An as_of before the floor's: the same. The preview then lists what the next cycle closes.
SELECT pg_temp.add_calls('2100-01-01 11:00:40+00', 2);
SELECT pg_temp.add_calls('2100-01-01 11:59+00', 2);
CREATE TEMP TABLE preview AS
SELECT call_id FROM messenger.preview_call_timeouts(batch_size => 100, as_of => '2100-01-01 12:12+00');
CREATE TEMP TABLE b1 AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 100, as_of => '2100-01-01 12:12+00');
SELECT is((SELECT missed_count FROM b1), 4, 'an as_of before the floor''s makes the cycle walk from the start');
SELECT set_eq($$SELECT call_id FROM preview$$,
              $$SELECT o.reference_id FROM messenger.realtime_outbox AS o
                 WHERE o.correlation_id = (SELECT run_id FROM b1)$$,
              'the preview listed exactly the calls that cycle closed');

SELECT * FROM finish();
ROLLBACK;
