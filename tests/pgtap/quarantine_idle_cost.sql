-- The quarantine costs nothing when idle: with 50 000 calls in backoff, older than every other
-- call, an idle cycle touches no more than twice the buffers of an idle cycle with an empty
-- quarantine (the backlog claim starts above the claim floor instead of walking them), and
-- the clean-up of closed calls' quarantine rows does not read the quarantine. Measured through
-- this transaction's own buffer counters of every relation of schema messenger.
BEGIN;
SELECT plan(7);

-- 2 000 live Ringing and 2 000 live Answered calls around as_of 2100-01-01 12:00.
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing', t, NULL, t
  FROM generate_series(1, 2000) AS g, LATERAL (SELECT timestamptz '2100-01-01 12:00+00' - g * interval '20 milliseconds') AS x (t)
UNION ALL
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Video', 'Answered', t - interval '1 hour',
       t - interval '59 minutes', t
  FROM generate_series(1, 2000) AS g, LATERAL (SELECT timestamptz '2100-01-01 12:00+00' - g * interval '3 seconds') AS x (t);
ANALYZE messenger.call_sessions;

CREATE TEMP TABLE cost (label text, blocks bigint, quarantine_blocks bigint);
CREATE FUNCTION pg_temp.snapshot(p_label text) RETURNS void LANGUAGE sql AS $$
    INSERT INTO cost
    SELECT p_label,
           (SELECT sum(pg_stat_get_xact_blocks_fetched(c.oid))::bigint
              FROM pg_class AS c WHERE c.relnamespace = 'messenger'::regnamespace AND c.relkind IN ('r', 'i', 'p')),
           (SELECT sum(pg_stat_get_xact_blocks_fetched(c.oid))::bigint
              FROM pg_class AS c
             WHERE c.oid = 'messenger.call_reaper_quarantine'::regclass
                OR c.oid IN (SELECT i.indexrelid FROM pg_index AS i
                              WHERE i.indrelid = 'messenger.call_reaper_quarantine'::regclass))
$$;

-- Baseline: empty quarantine. The first cycle is a warm-up (plans, dead entries of other files).
CREATE TEMP TABLE w1 AS SELECT * FROM messenger.reap_call_timeouts(as_of => '2100-01-01 12:00+00');
SELECT pg_temp.snapshot('empty before');
CREATE TEMP TABLE idle_empty AS SELECT * FROM messenger.reap_call_timeouts(as_of => '2100-01-01 12:00+00');
SELECT pg_temp.snapshot('empty after');

-- 50 000 Ringing calls from the day before, all quarantined with their retry an hour ahead.
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing', t, NULL, t
  FROM generate_series(1, 50000) AS g, LATERAL (SELECT timestamptz '2099-12-31 12:00+00' + g * interval '1 second') AS x (t);
INSERT INTO messenger.call_reaper_quarantine
       (call_id, phase, attempts, first_failed_at, last_failed_at, next_attempt_at, last_sqlstate, last_message, last_run_id)
SELECT c.call_id, 'ring_timeout', 1, '2100-01-01 11:59+00', '2100-01-01 11:59+00', '2100-01-01 13:00+00',
       'P0001', 'test', gen_random_uuid()
  FROM messenger.call_sessions AS c WHERE c.started_at < '2100-01-01 11:00+00' AND c.status = 'Ringing';
ANALYZE messenger.call_sessions, messenger.call_reaper_quarantine;

-- The first cycle after the flood walks the quarantined entries once and moves the floor.
CREATE TEMP TABLE first_walk AS SELECT * FROM messenger.reap_call_timeouts(as_of => '2100-01-01 12:00+00');
SELECT pg_temp.snapshot('full before');
-- A millisecond later: a floor is trusted by a later as_of (at the same one, something may
-- have been written below it at that very instant).
CREATE TEMP TABLE idle_full AS SELECT * FROM messenger.reap_call_timeouts(as_of => '2100-01-01 12:00:00.001+00');
SELECT pg_temp.snapshot('full after');

CREATE TEMP TABLE delta AS
SELECT (SELECT a.blocks - b.blocks FROM cost a, cost b WHERE a.label = 'empty after' AND b.label = 'empty before') AS empty_blocks,
       (SELECT a.blocks - b.blocks FROM cost a, cost b WHERE a.label = 'full after' AND b.label = 'full before') AS full_blocks,
       (SELECT a.quarantine_blocks - b.quarantine_blocks FROM cost a, cost b
         WHERE a.label = 'full after' AND b.label = 'full before') AS full_quarantine_blocks;
SELECT diag(format('idle cycle buffers: empty quarantine %s, 50 000 calls in backoff %s (quarantine and its indexes: %s)',
               empty_blocks, full_blocks, full_quarantine_blocks)) FROM delta;

SELECT is((SELECT ARRAY[missed_count, failed_count, poisoned_count] FROM idle_empty), ARRAY[0, 0, 0],
          'the baseline cycle is idle');
SELECT is((SELECT ARRAY[missed_count, failed_count, poisoned_count] FROM idle_full), ARRAY[0, 0, 0],
          'the cycle beside 50 000 quarantined calls is idle: none is due for a retry');
SELECT ok((SELECT full_blocks <= 2 * empty_blocks FROM delta),
          'with 50 000 calls in backoff an idle cycle touches at most twice the buffers of one with an empty quarantine');
SELECT cmp_ok((SELECT full_quarantine_blocks FROM delta), '<=', 20::bigint,
              'an idle cycle reads a handful of quarantine pages, not the 50 000 rows');
SELECT ok((SELECT f.due_key >= '2099-12-31 12:00+00'::timestamptz + interval '50000 seconds'
             FROM messenger.call_reaper_claim_floor AS f WHERE f.phase = 'ring_timeout'),
          'the ring-timeout claim floor sits above the last quarantined call');

-- A DBA releases one quarantined call: the floor is reset and the next cycle closes it.
DELETE FROM messenger.call_reaper_quarantine
 WHERE call_id = (SELECT call_id FROM messenger.call_sessions WHERE started_at = '2099-12-31 12:00+00'::timestamptz + interval '25000 seconds');
SELECT is((SELECT count(*)::integer FROM messenger.call_reaper_claim_floor WHERE phase = 'ring_timeout'), 0,
          'releasing a quarantined call below the floor resets the floor');
CREATE TEMP TABLE released AS SELECT * FROM messenger.reap_call_timeouts(as_of => '2100-01-01 12:01+00');
SELECT is((SELECT status FROM messenger.call_sessions WHERE started_at = '2099-12-31 12:00+00'::timestamptz + interval '25000 seconds'),
          'Missed', 'the released call is closed by the next cycle');

SELECT * FROM finish();
ROLLBACK;
