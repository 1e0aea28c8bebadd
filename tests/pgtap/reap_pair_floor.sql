-- Each relation pair keeps its own claim floor: a drain on a second pair (a shard's shape)
-- stores a floor keyed by that pair's calls relation, anchored at one of its calls, and its next
-- cycles start there; the default pair neither sees nor touches it. The anchor check reads the
-- pair's own relation, and so does the step over the quarantine to the first healthy call. A
-- call released from the quarantine deletes every other pair's floor (the quarantine does not
-- say which relation holds the call), and the drain still closes every due call of the pair
-- exactly once, with exactly its outbox rows.
BEGIN;
SELECT plan(14);
-- The routines called by themselves below run with the cycle's planner settings.
\ir fixtures/cycle_settings.sql

\ir fixtures/second_pair.sql
-- 1 000 Ringing calls of the second pair overdue at 12:00, a second apart.
INSERT INTO pair_test.calls
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, updated_at)
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing', t, t
  FROM generate_series(1, 1000) AS g, LATERAL (SELECT timestamptz '2100-01-01 10:00+00' + g * interval '1 second') AS x (t);
DELETE FROM messenger.call_reaper_claim_floor;

-- The lanes a run of the pair (p_calls) at p_as_of would claim, its floor checked.
CREATE FUNCTION pg_temp.lanes(p_calls regclass, p_as_of timestamptz)
RETURNS messenger.call_reaper_lanes LANGUAGE sql AS $$
    SELECT messenger._reap_lanes(
               ROW('ring_timeout', gen_random_uuid(), p_as_of, '45 seconds', 200, '15 seconds', '1 minute',
                   '1 hour', 63, NULL, p_calls,
                   CASE WHEN p_calls = 'pair_test.calls'::regclass THEN 'pair_test.outbox' ELSE 'messenger.realtime_outbox' END
                   )::messenger.call_reaper_phase_run)
$$;
-- Active, due, unquarantined Ringing calls of the second pair below its floor: none may be.
CREATE FUNCTION pg_temp.below_floor() RETURNS integer LANGUAGE sql AS $$
    SELECT count(*)::integer
      FROM messenger.call_reaper_claim_floor AS f
      JOIN pair_test.calls AS s
        ON s.status = 'Ringing' AND (s.started_at, s.call_id) < (f.due_key, f.call_id)
     WHERE f.calls = 'pair_test.calls'::regclass AND f.phase = 'ring_timeout'
       AND NOT EXISTS (SELECT FROM messenger.call_reaper_quarantine AS q WHERE q.call_id = s.call_id)
$$;

CREATE TEMP TABLE r1 AS SELECT * FROM pg_temp.reap_pair('pair_test.calls', 'pair_test.outbox', '2100-01-01 12:00+00');
SELECT is((SELECT missed_count FROM r1), 200, 'the pair''s first run closes a full batch of its oldest calls');
SELECT is(ARRAY(SELECT calls::text || ' ' || phase FROM messenger.call_reaper_claim_floor ORDER BY 1),
          ARRAY['pair_test.calls ring_timeout'],
          'its full backlog lane stores a floor keyed by the pair''s calls relation, none for the default pair');
SELECT ok(EXISTS (SELECT FROM messenger.call_reaper_claim_floor AS f
                    JOIN pair_test.calls AS s ON s.call_id = f.call_id AND s.started_at = f.anchor_started_at
                   WHERE f.calls = 'pair_test.calls'::regclass),
          'the floor is anchored at a call of the pair''s own relation');
SELECT is(pg_temp.below_floor(), 0, 'no due call of the pair lies below its floor');
SELECT is((pg_temp.lanes('pair_test.calls', '2100-01-01 12:00:01+00')).backlog_key,
          (SELECT due_key FROM messenger.call_reaper_claim_floor WHERE calls = 'pair_test.calls'::regclass),
          'the pair''s next run trusts it: its backlog lane starts at the floor');
SELECT is((pg_temp.lanes('messenger.call_sessions', '2100-01-01 12:00:01+00')).floor_stored, false,
          'the default pair finds no floor of its own');

-- Check (c) looks in the pair's relation: its anchor gone from there, the floor is not trusted.
SAVEPOINT anchor;
DELETE FROM pair_test.calls WHERE call_id = (SELECT call_id FROM messenger.call_reaper_claim_floor);
SELECT is((pg_temp.lanes('pair_test.calls', '2100-01-01 12:00:01+00')).backlog_key, '-infinity'::timestamptz,
          'a floor whose anchor left the pair''s relation is not trusted');
ROLLBACK TO SAVEPOINT anchor;

-- A release from the quarantine deletes every other pair's floor.
INSERT INTO messenger.call_reaper_quarantine
       (call_id, phase, attempts, first_failed_at, last_failed_at, next_attempt_at, last_sqlstate, last_message, last_run_id)
VALUES (gen_random_uuid(), 'ring_timeout', 1, '2100-01-01 12:00+00', '2100-01-01 12:00+00', '2100-01-01 12:01+00',
        'P0001', 'test', gen_random_uuid());
SELECT is((SELECT count(*)::integer FROM messenger.call_reaper_claim_floor), 1, 'a quarantine row alone leaves the floor');
-- With a call quarantined and the floor trusted, the lanes step over the quarantine to the
-- first healthy call at or after the floor: a probe of the pair's own relation.
SELECT is((SELECT ROW(l.over_quarantine, l.backlog_key)::text FROM pg_temp.lanes('pair_test.calls', '2100-01-01 12:00:01+00') AS l),
          (SELECT ROW(true, min(s.started_at))::text FROM pair_test.calls AS s, messenger.call_reaper_claim_floor AS f
            WHERE f.calls = 'pair_test.calls'::regclass AND s.status = 'Ringing' AND s.started_at >= f.due_key),
          'with a call quarantined, the pair''s backlog lane starts at its first healthy call past the floor');
DELETE FROM messenger.call_reaper_quarantine;
SELECT is((SELECT count(*)::integer FROM messenger.call_reaper_claim_floor), 0,
          'a released call deletes the other pair''s floor');

-- The drain, to its end: runs a second apart until one closes nothing.
CREATE TEMP TABLE drain AS
SELECT g, r.missed_count
  FROM generate_series(1, 8) AS g,
       LATERAL pg_temp.reap_pair('pair_test.calls', 'pair_test.outbox', '2100-01-01 12:00+00'::timestamptz + g * interval '1 second') AS r;
SELECT is(ARRAY(SELECT missed_count FROM drain ORDER BY g), ARRAY[200, 200, 200, 200, 3, 0, 0, 0],
          'the drain goes on from where the floor was deleted: the 803 calls left, then nothing');
SELECT is((SELECT count(*)::integer FROM pair_test.calls WHERE status = 'Ringing' AND started_at < '2100-01-01 12:00+00'),
          0, 'every due Ringing call of the pair is closed');
SELECT is((SELECT count(*) FROM pair_test.outbox WHERE kind = 'CallMissed'),
          (SELECT count(*) FROM pair_test.calls WHERE status = 'Missed'),
          'with exactly one CallMissed row per closed call');
SELECT is((SELECT count(*)::integer FROM (SELECT reference_id FROM pair_test.outbox WHERE kind = 'CallMissed'
                                           GROUP BY reference_id HAVING count(*) > 1) AS d),
          0, 'and no call pushed twice');

SELECT * FROM finish();
ROLLBACK;
