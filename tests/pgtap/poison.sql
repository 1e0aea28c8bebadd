-- Poison calls (their transition or outbox insert raises) are excluded, counted, quarantined
-- with backoff and left active; the rest of the batch commits, and poison never starves
-- healthy calls, even when there are more poison calls than batch_size.
BEGIN;
SELECT plan(16);
-- The call_poisoned WARNINGs this test provokes are expected; keep the TAP output readable.
SET LOCAL client_min_messages = error;

-- A product trigger that refuses to close calls of one caller (the fixture), and one that
-- refuses the outbox row of one call: stand-ins for whatever makes a row poison in production.
\ir fixtures/poison_caller.sql
CREATE FUNCTION pg_temp.refuse_poison_push() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.reference_id = '00000000-0000-0000-0000-0000000000c5' THEN
        RAISE EXCEPTION 'push refused' USING ERRCODE = '23514';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER test_poison_push BEFORE INSERT ON messenger.realtime_outbox
    FOR EACH ROW EXECUTE FUNCTION pg_temp.refuse_poison_push();

-- Three poison calls ring longest, then one healthy call, then one whose outbox row is refused.
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
SELECT ('00000000-0000-0000-0000-0000000000c' || g)::uuid,
       CASE WHEN g <= 3 THEN '00000000-0000-0000-0000-00000000dead'::uuid ELSE gen_random_uuid() END,
       gen_random_uuid(), 'Audio', 'Ringing',
       '2100-01-01 00:00+00'::timestamptz + g * interval '1 second', NULL,
       '2100-01-01 00:00+00'::timestamptz + g * interval '1 second'
  FROM generate_series(1, 5) AS g;
CREATE TEMP TABLE counters_before AS SELECT * FROM messenger.call_reaper_counters;

CREATE TEMP TABLE r1 AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 2, as_of => '2100-01-01 01:00:00+00');
SELECT is((SELECT ARRAY[missed_count, poisoned_count] FROM r1), ARRAY[0, 2],
          'a batch made only of poison calls completes, reporting both as poisoned');
SELECT is((SELECT result FROM r1), 'completed', 'a poisoned batch does not roll the cycle back');
SELECT results_eq(
    $$SELECT call_id::text, phase, attempts, last_sqlstate, next_attempt_at, last_run_id
        FROM messenger.call_reaper_quarantine ORDER BY call_id$$,
    $$VALUES ('00000000-0000-0000-0000-0000000000c1', 'ring_timeout', 1, 'P0001',
              '2100-01-01 01:01:00+00'::timestamptz, (SELECT run_id FROM r1)),
             ('00000000-0000-0000-0000-0000000000c2', 'ring_timeout', 1, 'P0001',
              '2100-01-01 01:01:00+00'::timestamptz, (SELECT run_id FROM r1))$$,
    'each poison call is quarantined with its SQLSTATE, run id and a retry time one backoff later');

CREATE TEMP TABLE r2 AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 2, as_of => '2100-01-01 01:00:15+00');
SELECT is((SELECT ARRAY[missed_count, poisoned_count] FROM r2), ARRAY[1, 1],
          'the next cycle passes over quarantined calls: one healthy call closes beside the third poison one');
SELECT is((SELECT status FROM messenger.call_sessions WHERE call_id = '00000000-0000-0000-0000-0000000000c4'),
          'Missed', 'the oldest healthy call is closed although three poison calls rang longer than batch_size');
CREATE TEMP TABLE r3 AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 2, as_of => '2100-01-01 01:00:30+00');
SELECT is((SELECT ARRAY[missed_count, poisoned_count] FROM r3), ARRAY[0, 1],
          'a call whose outbox row is refused is poisoned too');
SELECT results_eq(
    $$SELECT status, ended_at FROM messenger.call_sessions WHERE call_id = '00000000-0000-0000-0000-0000000000c5'$$,
    $$VALUES ('Ringing'::text, NULL::timestamptz)$$,
    'a refused outbox row rolls back that call''s transition: it is never closed without its push');
SELECT is(ARRAY(SELECT status FROM messenger.call_sessions WHERE caller_user_id = '00000000-0000-0000-0000-00000000dead'),
          ARRAY['Ringing', 'Ringing', 'Ringing'], 'poison calls are left active for a later cycle');
SELECT is((SELECT count(*)::integer FROM messenger.realtime_outbox
            WHERE reference_id::text LIKE '00000000-0000-0000-0000-0000000000c_'),
          1, 'only the closed healthy call has an outbox row');
SELECT is((SELECT last_sqlstate FROM messenger.call_reaper_quarantine
            WHERE call_id = '00000000-0000-0000-0000-0000000000c5'),
          '23514', 'the quarantine keeps the SQLSTATE of the refused push');

-- After the backoff the first two are due for a retry; batch_size 2 leaves them a share of one
-- call per cycle: the oldest is retried, fails again, and backs off twice as long.
CREATE TEMP TABLE r4 AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 2, as_of => '2100-01-01 01:01:00+00');
SELECT is((SELECT poisoned_count FROM r4), 1,
          'quarantined calls are retried once their backoff has passed, a bounded share of a batch at a time');
SELECT results_eq(
    $$SELECT attempts, next_attempt_at FROM messenger.call_reaper_quarantine
       WHERE call_id = '00000000-0000-0000-0000-0000000000c1'$$,
    $$VALUES (2, '2100-01-01 01:03:00+00'::timestamptz)$$,
    'a second failure doubles the backoff');
SELECT is((SELECT k.items_poisoned - b.items_poisoned FROM messenger.call_reaper_counters k, counters_before b),
          5::bigint, 'every poisoned attempt is counted');
SELECT is((SELECT k.errors - b.errors FROM messenger.call_reaper_counters k, counters_before b),
          5::bigint, 'every poisoned attempt counts as an error');

-- The cause is fixed and a DBA releases one call: the next cycle closes it.
DROP TRIGGER test_poison ON messenger.call_sessions;
DELETE FROM messenger.call_reaper_quarantine WHERE call_id = '00000000-0000-0000-0000-0000000000c3';
CREATE TEMP TABLE r5 AS SELECT * FROM messenger.reap_call_timeouts(as_of => '2100-01-01 01:01:15+00');
SELECT results_eq(
    $$SELECT call_id::text, status FROM messenger.call_sessions
       WHERE call_id IN ('00000000-0000-0000-0000-0000000000c2', '00000000-0000-0000-0000-0000000000c3')
       ORDER BY call_id$$,
    $$VALUES ('00000000-0000-0000-0000-0000000000c2', 'Missed'), ('00000000-0000-0000-0000-0000000000c3', 'Missed')$$,
    'a released call is closed by the next cycle, and so is one whose retry came due');
SELECT ok(NOT EXISTS (SELECT FROM messenger.call_reaper_quarantine q
                       JOIN messenger.call_sessions c USING (call_id)
                      WHERE c.status NOT IN ('Ringing', 'Answered')),
          'quarantine keeps only calls that are still active');

SELECT * FROM finish();
ROLLBACK;
