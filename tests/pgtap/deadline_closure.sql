-- messenger._reap_deadline(after_as_of): the deadline wake's lean closure. It closes the Ringing
-- calls whose deadline fell after after_as_of and up to now, oldest first, at most batch_size,
-- with their CallMissed rows carrying its run id, counts them (a completed run, reap_lag), and
-- writes no ledger row. Calls due before after_as_of, Answered calls and calls not yet due are
-- left. When it cannot close (paused, a statement that fails) it says 'fallback' and changes
-- nothing, so the caller runs the full cycle. The clock is its as_of: calls are placed relative
-- to clock_timestamp().
BEGIN;
SELECT plan(16);

UPDATE messenger.call_reaper_settings SET ring_timeout = '45 seconds', batch_size = 200, paused = false;
CREATE TEMP TABLE t0 AS SELECT clock_timestamp() - interval '45 seconds' AS due_now;
CREATE TEMP TABLE before AS SELECT * FROM messenger.call_reaper_counters;

INSERT INTO messenger.call_sessions (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
SELECT x.id::uuid, gen_random_uuid(), gen_random_uuid(), 'Audio', x.status, t0.due_now - x.ago,
       CASE WHEN x.status = 'Answered' THEN t0.due_now - x.ago END, t0.due_now - x.ago
  FROM t0, (VALUES ('00000000-0000-0000-0000-00000000e101', 'Ringing', interval '5 seconds'),   -- due 5 s ago
                   ('00000000-0000-0000-0000-00000000e102', 'Ringing', interval '15 seconds'),  -- due before the window
                   ('00000000-0000-0000-0000-00000000e103', 'Ringing', interval '-30 seconds'), -- not due for 30 s
                   ('00000000-0000-0000-0000-00000000e104', 'Answered', interval '5 seconds'),
                   ('00000000-0000-0000-0000-00000000e105', 'Ringing', interval '6 seconds'))   -- due 6 s ago
       AS x (id, status, ago);

CREATE TEMP TABLE r1 AS SELECT * FROM messenger._reap_deadline(clock_timestamp() - interval '10 seconds');
SELECT is((SELECT (result, missed_count, lock_acquired)::text FROM r1), '(completed,2,t)',
          'the calls due in the window are closed: completed, 2 Missed');
SELECT results_eq(
    $$SELECT call_id::text, status::text FROM messenger.call_sessions WHERE call_id::text LIKE '%e10_' ORDER BY call_id$$,
    $$VALUES ('00000000-0000-0000-0000-00000000e101', 'Missed'), ('00000000-0000-0000-0000-00000000e102', 'Ringing'),
             ('00000000-0000-0000-0000-00000000e103', 'Ringing'), ('00000000-0000-0000-0000-00000000e104', 'Answered'),
             ('00000000-0000-0000-0000-00000000e105', 'Missed')$$,
    'a call due before the window, one not yet due and an Answered one are left');
SELECT ok((SELECT bool_and(c.end_reason::text = 'Timeout' AND c.ended_at = r1.as_of AND c.updated_at = r1.as_of)
             FROM messenger.call_sessions AS c, r1 WHERE c.status::text = 'Missed'),
          'closed as a cycle closes them: end_reason Timeout, ended_at and updated_at at its as_of');
SELECT results_eq(
    $$SELECT o.reference_id::text, o.kind::text, o.target_id, o.correlation_id, o.created_at
        FROM messenger.realtime_outbox AS o ORDER BY o.id$$,
    $$SELECT c.call_id::text, 'CallMissed', 'user:' || c.caller_user_id, r1.run_id, r1.as_of
        FROM messenger.call_sessions AS c, r1 WHERE c.status::text = 'Missed' ORDER BY c.started_at$$,
    'one CallMissed row per closed call, to its caller, in due order, carrying the run id');
SELECT is((SELECT count(*) FROM messenger.call_reaper_runs), 0::bigint, 'no ledger row');
SELECT is((SELECT (k.runs_completed - b.runs_completed, k.items_missed - b.items_missed,
                   k.reap_lag_count - b.reap_lag_count, k.cycle_duration_count - b.cycle_duration_count)::text
             FROM messenger.call_reaper_counters AS k, before AS b),
          '(1,2,2,1)',
          'counted: one completed run, 2 Missed calls, 2 reap_lag observations, one cycle duration');
SELECT ok((SELECT k.reap_lag_sum - b.reap_lag_sum BETWEEN 11 AND 13 FROM messenger.call_reaper_counters AS k, before AS b),
          'reap_lag: seconds from each deadline to the closure (5 s and 6 s and what the test took)');
SELECT ok((SELECT k.reap_lag_buckets[array_position(k.reap_lag_bounds, 10)] - b.reap_lag_buckets[array_position(b.reap_lag_bounds, 10)] = 2
                  AND k.reap_lag_buckets[array_position(k.reap_lag_bounds, 5)] = b.reap_lag_buckets[array_position(b.reap_lag_bounds, 5)]
             FROM messenger.call_reaper_counters AS k, before AS b),
          'reap_lag buckets: both in le=10, neither in le=5');

-- Nothing left in the window: nothing closed, counted or written.
CREATE TEMP TABLE mid AS SELECT * FROM messenger.call_reaper_counters;
SELECT is((SELECT (result, missed_count)::text FROM messenger._reap_deadline((SELECT as_of FROM r1))),
          '(completed,0)', 'the next closure after the last finds nothing');
SELECT is((SELECT runs_completed FROM messenger.call_reaper_counters), (SELECT runs_completed FROM mid),
          'a closure that closed nothing is not counted (and writes nothing)');

-- At most batch_size, oldest first.
UPDATE messenger.call_reaper_settings SET batch_size = 2;
INSERT INTO messenger.call_sessions (call_id, caller_user_id, callee_user_id, media_type, status, started_at, updated_at)
SELECT ('00000000-0000-0000-0000-00000000e2' || g)::uuid, gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing',
       t0.due_now - g * interval '1 second', t0.due_now
  FROM t0, generate_series(10, 12) AS g;
SELECT is((SELECT missed_count FROM messenger._reap_deadline(clock_timestamp() - interval '13 seconds')), 2,
          'batch_size 2 of 3 due: 2 closed');
SELECT is((SELECT status::text FROM messenger.call_sessions WHERE call_id = '00000000-0000-0000-0000-00000000e210'), 'Ringing',
          'the newest is left (oldest first): the full cycle that follows a full batch takes it');

-- Paused, for the job role: nothing, and 'fallback' (the full cycle then says paused). An
-- operator (this session) still closes, as a cycle by hand does.
UPDATE messenger.call_reaper_settings SET paused = true, batch_size = 200;
SET LOCAL ROLE messenger_call_reaper;
CREATE TEMP TABLE paused_job AS SELECT * FROM messenger._reap_deadline('-infinity');
RESET ROLE;
SELECT is((SELECT (result, missed_count, lock_acquired)::text FROM paused_job),
          '(fallback,0,f)', 'paused: fallback for the job role, nothing closed');
UPDATE messenger.call_reaper_settings SET paused = false;

-- A statement that fails (a product trigger refusing one call): rolled back whole, 'fallback'.
CREATE FUNCTION pg_temp.refuse() RETURNS trigger LANGUAGE plpgsql AS
$$BEGIN IF NEW.call_id = '00000000-0000-0000-0000-00000000e210' THEN RAISE EXCEPTION 'refused'; END IF; RETURN NEW; END$$;
CREATE TRIGGER refuse BEFORE UPDATE ON messenger.call_sessions FOR EACH ROW EXECUTE FUNCTION pg_temp.refuse();
INSERT INTO messenger.call_sessions (call_id, caller_user_id, callee_user_id, media_type, status, started_at, updated_at)
SELECT '00000000-0000-0000-0000-00000000e301', gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing', t0.due_now - interval '7 seconds', t0.due_now
  FROM t0;
CREATE TEMP TABLE mid2 AS SELECT * FROM messenger.call_reaper_counters;
SELECT is((SELECT (result, missed_count)::text FROM messenger._reap_deadline('-infinity')), '(fallback,0)',
          'a failing statement: fallback');
SELECT is((SELECT count(*) FROM messenger.call_sessions WHERE status::text = 'Ringing'
             AND call_id IN ('00000000-0000-0000-0000-00000000e210', '00000000-0000-0000-0000-00000000e301', '00000000-0000-0000-0000-00000000e102')),
          3::bigint, 'rolled back whole: the healthy calls beside the refused one are still Ringing');
SELECT is((SELECT (runs_completed, items_missed)::text FROM messenger.call_reaper_counters),
          (SELECT (runs_completed, items_missed)::text FROM mid2), 'and nothing was counted');

SELECT * FROM finish();
ROLLBACK;
