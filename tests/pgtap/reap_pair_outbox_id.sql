-- A pair's outbox whose id has no default (a Citus shard: id bigint NOT NULL, no identity, no
-- DEFAULT) gets its rows with ids from the default outbox's sequence, in due order, unique; an
-- outbox that keeps its own default (LIKE ... INCLUDING ALL) numbers them itself. With no
-- default there and no sequence behind messenger.realtime_outbox.id, the pair is refused 22023
-- by the shape check and nothing changes.
BEGIN;
SELECT plan(7);

\ir fixtures/second_pair.sql
CREATE TEMP TABLE calls_before AS SELECT * FROM pair_test.calls;
-- The sequence's position before and after the run, taken by nextval (another session's
-- nextval in between only moves it further): every id the run takes lies strictly between.
CREATE TEMP TABLE seq_before AS SELECT nextval(pg_get_serial_sequence('messenger.realtime_outbox', 'id')) AS v;

CREATE TEMP TABLE r1 AS SELECT * FROM pg_temp.reap_pair('pair_test.calls', 'pair_test.outbox_noid', '2100-01-01 03:00+00');
CREATE TEMP TABLE seq_after AS SELECT nextval(pg_get_serial_sequence('messenger.realtime_outbox', 'id')) AS v;
SELECT is((SELECT ARRAY[missed_count, failed_count, poisoned_count] FROM r1), ARRAY[2, 1, 0],
          'a pair whose outbox id has no default closes its due calls, none poisoned');
SELECT results_eq(
    $$SELECT reference_id, target_id FROM pair_test.outbox_noid ORDER BY id$$,
    $$VALUES ('b0000000-0000-0000-0000-000000000001'::uuid, 'user:00000000-0000-0000-0000-0000000cb001'::text),
             ('b0000000-0000-0000-0000-000000000002', 'user:00000000-0000-0000-0000-0000000cb002'),
             ('b0000000-0000-0000-0000-000000000004', 'user:00000000-0000-0000-0000-0000000cb004'),
             ('b0000000-0000-0000-0000-000000000004', 'user:00000000-0000-0000-0000-0000000eb004')$$,
    'its rows in id order are in due order, the caller''s before the callee''s');
SELECT is((SELECT count(DISTINCT id)::integer FROM pair_test.outbox_noid
            WHERE id > (SELECT v FROM seq_before) AND id < (SELECT v FROM seq_after)), 4,
          'their ids are unique and come from messenger.realtime_outbox''s own sequence');

-- An outbox that keeps a default (its own identity, from LIKE ... INCLUDING ALL) numbers its rows.
UPDATE pair_test.calls AS c SET status = b.status, end_reason = b.end_reason, ended_at = b.ended_at,
       updated_at = b.updated_at, duration_seconds = b.duration_seconds
  FROM calls_before AS b WHERE b.call_id = c.call_id;
CREATE TEMP TABLE r3 AS SELECT * FROM pg_temp.reap_pair('pair_test.calls', 'pair_test.outbox', '2100-01-01 03:00+00');
SELECT results_eq($$SELECT id FROM pair_test.outbox ORDER BY id$$,
                  $$SELECT g::bigint FROM generate_series(1, 4) AS g$$,
                  'an outbox with its own identity numbers the rows by it');

-- No default on the pair's outbox id, and none behind the default outbox's id to take it from.
DELETE FROM pair_test.outbox_noid;
UPDATE pair_test.calls AS c SET status = b.status, end_reason = b.end_reason, ended_at = b.ended_at,
       updated_at = b.updated_at, duration_seconds = b.duration_seconds
  FROM calls_before AS b WHERE b.call_id = c.call_id;
DELETE FROM pair_test.outbox;
ALTER TABLE messenger.realtime_outbox ALTER COLUMN id DROP IDENTITY IF EXISTS;
SELECT format('ALTER SEQUENCE %s OWNED BY NONE', s) FROM pg_get_serial_sequence('messenger.realtime_outbox', 'id') AS s
 WHERE s IS NOT NULL \gexec
ALTER TABLE messenger.realtime_outbox ALTER COLUMN id SET DEFAULT 0;
SELECT is(pg_get_serial_sequence('messenger.realtime_outbox', 'id'), NULL,
          'messenger.realtime_outbox.id has a default but no sequence now');
SELECT throws_ok($$SELECT * FROM pg_temp.reap_pair('pair_test.calls', 'pair_test.outbox_noid', '2100-01-01 03:00+00')$$,
                 '22023', NULL,
                 'a pair whose outbox id has no default, with no sequence to take it from, is refused with 22023');
SELECT ok((SELECT count(*) FROM pair_test.outbox_noid) = 0
          AND NOT EXISTS (SELECT FROM pair_test.calls AS c JOIN calls_before AS b USING (call_id)
                           WHERE (c.status, c.ended_at) IS DISTINCT FROM (b.status, b.ended_at))
          AND NOT EXISTS (SELECT FROM messenger.call_reaper_quarantine WHERE call_id::text LIKE 'b%'),
          'and nothing changed: no call closed, no outbox row, nothing quarantined');

SELECT * FROM finish();
ROLLBACK;
