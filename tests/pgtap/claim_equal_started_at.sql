-- Calls that share one started_at (a bulk import, a migration's now(), a coarse clock) cost a
-- claim what a batch costs, not what the group costs. The product's ix_call_active has no
-- call_id, so a lane that starts at a floor inside the group cannot seek to the floor's call:
-- it starts at the group's first call and takes the calls in the index's order. Counted here in
-- index entries read (pg_stat_get_xact_tuples_returned: this transaction's own reads of the
-- claims' index), never in time.
BEGIN;
SELECT plan(10);
-- The routines called by themselves below run with the cycle's planner settings.
\ir fixtures/cycle_settings.sql

-- 2 000 Ringing calls with one started_at, overdue at 1990-01-01 12:00,
-- older than any other call of the database.
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, updated_at)
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing',
       timestamptz '1990-01-01 10:00+00', timestamptz '1990-01-01 10:00+00'
  FROM generate_series(1, 2000);
-- A floor's call inside the group: the one in the middle by call_id.
CREATE TEMP TABLE floor_call AS
SELECT call_id FROM messenger.call_sessions WHERE started_at = '1990-01-01 10:00+00'
 ORDER BY call_id OFFSET 1000 LIMIT 1;

CREATE FUNCTION pg_temp.entries_read() RETURNS bigint LANGUAGE sql AS $$
    SELECT sum(pg_stat_get_xact_tuples_returned(i))
      FROM messenger._call_reaper_claim_indexes('messenger.call_sessions') AS i
$$;

SELECT is((SELECT array_agg(indexrelname::text) FROM pg_stat_user_indexes
            WHERE schemaname = 'messenger' AND relname = 'call_sessions'
              AND indexrelid IN (SELECT messenger._call_reaper_claim_indexes('messenger.call_sessions'))),
          ARRAY['ix_call_active'], 'the claims read the product''s ix_call_active, which has no call_id');

-- The backlog lane from that floor, 100 calls, as _reap_claim runs it (the fresh lane ends at
-- the cutoff with the max uuid).
-- The Ringing phase's lanes at that cutoff, nothing quarantined (what the claim reads of them).
CREATE TEMP TABLE lanes AS
SELECT jsonb_populate_record(NULL::messenger.call_reaper_lanes,
                             '{"status": "Ringing", "cutoff": "1990-01-01 11:59:15+00", "quarantined": false}') AS l;
CREATE TEMP TABLE before AS SELECT pg_temp.entries_read() AS n;
CREATE TEMP TABLE lane AS
SELECT c.* FROM messenger._reap_claim_lane((SELECT l FROM lanes), '1990-01-01 10:00+00',
                                          (SELECT call_id FROM floor_call), '1990-01-01 11:59:00+00',
                                          'ffffffff-ffff-ffff-ffff-ffffffffffff', '{}', 100,
                                          'messenger.call_sessions') AS c;
CREATE TEMP TABLE read_by_lane AS SELECT pg_temp.entries_read() - (SELECT n FROM before) AS n;

SELECT is((SELECT cardinality(ids) FROM lane), 100, 'a lane starting inside the group claims a full batch');
SELECT is((SELECT count(DISTINCT x) FROM lane, unnest(started) AS x), 1::bigint, 'all of the group''s started_at');
SELECT cmp_ok((SELECT n FROM read_by_lane), '<=', 200::bigint,
              format('the claim and its count read at most twice the batch of index entries (read %s of a 2 000-call group)',
                     (SELECT n FROM read_by_lane)));
SELECT is((SELECT skipped FROM lane), 0, 'nothing held, nothing counted as skipped');
SELECT is((SELECT upto_key FROM lane), timestamptz '1990-01-01 10:00+00', 'a full lane stops in the group');

-- The next lane of the cycle (the sweep up to that floor) leaves the floor's group to the
-- backlog lane: it reads nothing of it.
DELETE FROM before; INSERT INTO before SELECT pg_temp.entries_read();
CREATE TEMP TABLE sweep AS
SELECT c.* FROM messenger._reap_claim_lane((SELECT l FROM lanes), '-infinity',
                                          'ffffffff-ffff-ffff-ffff-ffffffffffff', '1990-01-01 10:00+00',
                                          (SELECT call_id FROM floor_call), (SELECT ids FROM lane), 100,
                                          'messenger.call_sessions') AS c;
SELECT is((SELECT cardinality(ids) FROM sweep), 0, 'a lane that ends at a floor inside the group claims none of it');
SELECT cmp_ok(pg_temp.entries_read() - (SELECT n FROM before), '<=', 2::bigint,
              'and reads none of its index entries');

-- A whole drain of the group in one transaction closes every call exactly once (the cycles
-- close other due calls of the database as well; counted here are the group's).
DO $$
BEGIN
    FOR i IN 1 .. 21 LOOP
        PERFORM messenger.reap_call_timeouts(batch_size => 100, as_of => '1990-01-01 12:00+00');
    END LOOP;
END
$$;
SELECT is((SELECT count(*)::integer FROM messenger.call_sessions
            WHERE started_at = '1990-01-01 10:00+00' AND status = 'Ringing'),
          0, '21 cycles of 100 close all 2 000 calls of one started_at');
SELECT is((SELECT count(DISTINCT o.reference_id)::integer || '/' || count(*)
             FROM messenger.realtime_outbox AS o
             JOIN messenger.call_sessions AS s ON s.call_id = o.reference_id
            WHERE s.started_at = '1990-01-01 10:00+00' AND o.kind = 'CallMissed'),
          '2000/2000', 'each once: one CallMissed for each call');

SELECT * FROM finish();
ROLLBACK;
