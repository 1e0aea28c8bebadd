-- The cycle's subtransaction budget (64) is shared by the phases of call_reaper_phases(): each
-- but the last at most half of what is left, the last the rest. Poison enough to spend the
-- whole budget in phase 1 still leaves phase 2 its attempts, and the cycle spends exactly 64.
BEGIN;
SELECT plan(4);
SET LOCAL client_min_messages = error;  -- the call_poisoned WARNINGs below are expected
\ir fixtures/poison_caller.sql

-- 200 poison Ringing calls; 100 poison stale Answered calls behind one healthy one, the oldest.
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
SELECT gen_random_uuid(), '00000000-0000-0000-0000-00000000dead', gen_random_uuid(), 'Audio', 'Ringing',
       '2100-01-01 02:00+00'::timestamptz + g * interval '1 second', NULL,
       '2100-01-01 02:00+00'::timestamptz + g * interval '1 second'
  FROM generate_series(1, 200) AS g
UNION ALL
SELECT gen_random_uuid(), CASE WHEN g = 0 THEN gen_random_uuid() ELSE '00000000-0000-0000-0000-00000000dead' END,
       gen_random_uuid(), 'Audio', 'Answered', '2100-01-01 00:00+00'::timestamptz + g * interval '1 second',
       '2100-01-01 00:00+00'::timestamptz + g * interval '1 second',
       '2100-01-01 00:00+00'::timestamptz + g * interval '1 second'
  FROM generate_series(0, 100) AS g;

CREATE TEMP TABLE c1 AS
SELECT * FROM messenger.reap_call_timeouts(batch_size => 200, as_of => '2100-01-01 03:00+00');
SELECT is((SELECT result FROM c1), 'completed', 'a cycle of poison in both phases completes');
SELECT is((SELECT failed_count FROM c1), 1,
          'phase 2 closes its healthy call although phase 1''s poison could spend the whole budget');
SELECT is((SELECT subtransactions FROM messenger.call_reaper_runs AS r JOIN c1 USING (run_id)), 64,
          'the cycle spends exactly its budget of 64 subtransactions');
SELECT cmp_ok((SELECT deferred_count FROM messenger.call_reaper_runs AS r JOIN c1 USING (run_id)), '>', 0,
              'and leaves the calls it had no attempts for untried');

SELECT * FROM finish();
ROLLBACK;
