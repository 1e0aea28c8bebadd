-- A drain's cycles start where the previous one stopped (the claim floor), never above a call
-- they left claimable: after each cycle no active, unquarantined due call lies below the floor.
-- The drain's end (the first backlog lane that comes up short) sweeps below the floor, so a call
-- committed below it meanwhile is closed then; a drain of 1 000 calls keeps its floor.
BEGIN;
SELECT plan(19);
-- The routines called by themselves below run with the cycle's planner settings.
\ir fixtures/cycle_settings.sql
SET LOCAL client_min_messages = error;  -- the call_poisoned WARNINGs below are expected

-- 1 000 Ringing calls overdue at 2100-01-01 12:00, a second apart: the backlog lane's calls.
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, updated_at)
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing', t, t
  FROM generate_series(1, 1000) AS g, LATERAL (SELECT timestamptz '2100-01-01 10:00+00' + g * interval '1 second') AS x (t);

-- The invariant, as a count of violations: active, due, unquarantined calls below the floor.
CREATE FUNCTION pg_temp.below_floor(p_as_of timestamptz) RETURNS integer LANGUAGE sql AS $$
    SELECT count(*)::integer
      FROM messenger.call_reaper_claim_floor AS f
      JOIN messenger.call_reaper_phases() AS p ON p.phase = f.phase
     CROSS JOIN messenger.call_reaper_settings AS st
      JOIN messenger.call_sessions AS s
        ON s.status = p.status
       AND (s.started_at, s.call_id) < (f.due_key, f.call_id)
     WHERE NOT EXISTS (SELECT FROM messenger.call_reaper_quarantine AS q WHERE q.call_id = s.call_id)
       AND messenger.call_is_due(s.status, s.started_at, s.updated_at,
                                 p_as_of - (to_jsonb(st) ->> p.timeout_setting)::interval)
$$;

CREATE TEMP TABLE c1 AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 100, as_of => '2100-01-01 12:00+00');
SELECT is((SELECT missed_count FROM c1), 100, 'the first cycle closes a full batch of the oldest calls');
SELECT results_eq(
    $$SELECT due_key, reset_at FROM messenger.call_reaper_claim_floor WHERE phase = 'ring_timeout'$$,
    $$VALUES (timestamptz '2100-01-01 10:00+00' + interval '100 seconds', timestamptz '2100-01-01 12:00+00')$$,
    'a full backlog lane leaves the floor at the last call it closed, reset_at the cycle''s as_of');
SELECT is(pg_temp.below_floor('2100-01-01 12:00+00'), 0, 'no claimable call lies below the floor');
SELECT is((SELECT count(*)::integer FROM messenger.call_reaper_claim_floor WHERE phase = 'stale_answered'), 0,
          'a phase whose backlog lane came up short keeps no floor');

-- A call committed long after the started_at it carries, below the floor, during the drain.
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, updated_at)
VALUES ('00000000-0000-0000-0000-00000000a7e0', gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing',
        '2100-01-01 10:00:30+00', '2100-01-01 10:00:30+00');
CREATE TEMP TABLE c2 AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 100, as_of => '2100-01-01 12:00:01+00');
SELECT is((SELECT missed_count FROM c2), 100, 'the next cycle closes the next full batch');
SELECT is((SELECT count(*)::integer FROM messenger.call_sessions
            WHERE status = 'Missed' AND started_at > '2100-01-01 10:01:40+00' AND started_at <= '2100-01-01 10:03:20+00'), 100,
          'it starts at the floor: the 100 calls after the first batch, none of the first batch''s again');
SELECT is((SELECT status FROM messenger.call_sessions WHERE call_id = '00000000-0000-0000-0000-00000000a7e0'), 'Ringing',
          'the call committed below the floor waits for the drain''s end');

-- The rest of the drain: 8 more full cycles, then one whose lane comes up short.
DO $$
BEGIN
    FOR i IN 1 .. 8 LOOP
        -- as_of moves on, as the job's does: at the same as_of a floor is not trusted.
        PERFORM messenger.reap_call_timeouts(batch_size => 100,
                                             as_of => '2100-01-01 12:00:02+00'::timestamptz + i * interval '1 millisecond');
    END LOOP;
END
$$;
SELECT is((SELECT count(*)::integer FROM messenger.call_sessions WHERE status = 'Ringing'), 1,
          'ten full cycles closed the 1 000 calls, the late one is still Ringing');
SELECT is(pg_temp.below_floor('2100-01-01 12:00:02+00'), 1, 'it is the one call below the floor');
SELECT ok(EXISTS (SELECT FROM messenger.preview_call_timeouts(batch_size => 100, as_of => '2100-01-01 12:00:03+00')
                   WHERE call_id = '00000000-0000-0000-0000-00000000a7e0'),
          'the preview lists the call the drain''s end will sweep');
CREATE TEMP TABLE c11 AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 100, as_of => '2100-01-01 12:00:03+00');
SELECT is((SELECT missed_count FROM c11), 1,
          'the cycle whose backlog lane comes up short sweeps below the floor: it closes the late call');
SELECT results_eq($$SELECT swept, passed FROM messenger.call_reaper_claim_floor WHERE phase = 'ring_timeout'$$,
                  $$VALUES (true, 1000::bigint)$$,
                  'a drain of 1 000 calls keeps its floor, swept');
CREATE TEMP TABLE c12 AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 100, as_of => '2100-01-01 12:00:04+00');
SELECT results_eq(
    $$SELECT s.status::text, o.kind::text, o.correlation_id
        FROM messenger.call_sessions AS s
        LEFT JOIN messenger.realtime_outbox AS o ON o.reference_id = s.call_id
       WHERE s.call_id = '00000000-0000-0000-0000-00000000a7e0'$$,
    $$SELECT 'Missed', 'CallMissed', run_id FROM c11$$,
    'the late call is closed, once: one CallMissed row, written by the sweeping cycle, none by the next');

-- Deferred calls stop the floor: 20 poison calls among 200 spend phase 1's 31 attempts.
\ir fixtures/poison_caller.sql
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, updated_at)
SELECT gen_random_uuid(),
       CASE WHEN g % 10 = 0 THEN '00000000-0000-0000-0000-00000000dead'::uuid ELSE gen_random_uuid() END,
       gen_random_uuid(), 'Audio', 'Ringing', t, t
  FROM generate_series(1, 400) AS g, LATERAL (SELECT timestamptz '2100-01-01 11:00+00' + g * interval '1 second') AS x (t);
CREATE TEMP TABLE p1 AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 200, as_of => '2100-01-01 12:00:05+00');
SELECT ok((SELECT deferred_count > 0 FROM messenger.call_reaper_runs WHERE run_id = (SELECT run_id FROM p1)),
          'the poisoned batch leaves calls deferred');
SELECT is(pg_temp.below_floor('2100-01-01 12:00:05+00'), 0, 'the floor stops at the first deferred call');
SELECT ok((SELECT f.due_key <= (SELECT min(s.started_at) FROM messenger.call_sessions AS s
                                 WHERE s.status = 'Ringing'
                                   AND NOT EXISTS (SELECT FROM messenger.call_reaper_quarantine AS q WHERE q.call_id = s.call_id))
             FROM messenger.call_reaper_claim_floor AS f WHERE f.phase = 'ring_timeout'),
          'no deferred call lies below the floor');
CREATE TEMP TABLE drained (cycles integer);
DO $$
DECLARE
    v_cycles integer := 0;
BEGIN
    WHILE EXISTS (SELECT FROM messenger.call_sessions AS s
                   WHERE s.status = 'Ringing'
                     AND NOT EXISTS (SELECT FROM messenger.call_reaper_quarantine AS q WHERE q.call_id = s.call_id))
          AND v_cycles < 100 LOOP
        v_cycles := v_cycles + 1;
        PERFORM messenger.reap_call_timeouts(batch_size => 200, as_of => '2100-01-01 12:00:06+00');
        IF pg_temp.below_floor('2100-01-01 12:00:06+00') > 0 THEN
            RAISE EXCEPTION 'cycle % left a claimable call below the floor', v_cycles;
        END IF;
    END LOOP;
    INSERT INTO drained VALUES (v_cycles);
END
$$;
SELECT cmp_ok((SELECT cycles FROM drained), '<', 100,
              'the poisoned drain closes every healthy call, keeping the invariant after each cycle');
SELECT is((SELECT count(*)::integer FROM messenger.call_reaper_quarantine), 40, 'and quarantines the 40 poison calls');

-- A floor older than poison_backoff_max is ignored: a call below it is claimed at once.
DELETE FROM messenger.call_reaper_quarantine;
DROP TRIGGER test_poison ON messenger.call_sessions;
DELETE FROM messenger.call_reaper_claim_floor;
INSERT INTO messenger.call_reaper_claim_floor
       (calls, phase, due_key, call_id, reset_at, as_of, run_id, anchor_started_at, vacuums, swept, passed)
SELECT 'messenger.call_sessions', 'ring_timeout', '2100-01-01 11:30+00', s.call_id, '2100-01-01 12:00:06+00', '2100-01-01 12:00:06+00',
       gen_random_uuid(), s.started_at, l.vacuums, true, 1000
  FROM messenger.call_sessions AS s,
       messenger._reap_lanes(ROW('ring_timeout', NULL, '2100-01-01 12:00:06+00', '45 seconds', 200, '15 seconds',
                                '1 minute', '1 hour', NULL, NULL, 'messenger.call_sessions', 'messenger.realtime_outbox')::messenger.call_reaper_phase_run) AS l
 WHERE s.started_at = '2100-01-01 11:30+00';
CREATE TEMP TABLE e1 AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 200, as_of => '2100-01-01 13:00:06+00');
SELECT is((SELECT missed_count FROM e1), 40, 'an expired floor is ignored: the calls below it are closed');

SELECT * FROM finish();
ROLLBACK;
