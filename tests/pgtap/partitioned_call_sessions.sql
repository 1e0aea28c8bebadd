-- Needs the partitioned stand-in: scripts/test-in-cluster runs this file in a database of its own
-- whose call_sessions stand-in/messenger_service.sql made with -v partitioned=on (range-
-- partitioned by month of started_at, handed to pg_partman), the reaper deployed onto it.
-- What the reaper needs of a partitioned call_sessions (docs/partitioning.md): its due index on
-- every partition, attached, including a partition pg_partman makes after the deploy; and the
-- core behaviours on partitions: ring-timeout -> Missed with one CallMissed row, stale ->
-- Failed with a CallEnded row per party, an idempotent second cycle, the batch limit, a call
-- in the DEFAULT partition, and an idle cycle that scans no partition sequentially.
BEGIN;
SELECT plan(19);

-- The partitions of call_sessions without an index attached to the reaper's ix_call_due.
CREATE TEMP VIEW partitions_without_due_index AS
SELECT t.relid::regclass::text AS partition
  FROM pg_partition_tree('messenger.call_sessions') AS t
 WHERE t.isleaf
   AND NOT EXISTS (SELECT FROM pg_partition_tree('messenger.ix_call_due') AS x
                     JOIN pg_index AS i ON i.indexrelid = x.relid
                    WHERE x.isleaf AND i.indrelid = t.relid);

SELECT is((SELECT pg_get_partkeydef('messenger.call_sessions'::regclass)), 'RANGE (started_at)',
          'the service''s call_sessions is range-partitioned by started_at');
SELECT col_is_pk('messenger', 'call_sessions', ARRAY['call_id', 'started_at'],
                 'its primary key carries the partition key');
SELECT ok(has_column_privilege('messenger_call_reaper_owner', 'messenger.call_sessions', 'status', 'UPDATE')
          AND NOT has_column_privilege('messenger_call_reaper_owner', 'messenger.call_sessions', 'caller_user_id', 'UPDATE'),
          'the reaper''s owner has exactly its column privileges on the partitioned table');
SELECT is(ARRAY(SELECT partition FROM partitions_without_due_index ORDER BY 1), '{}'::text[],
          'the deploy attached an ix_call_due to every partition, the DEFAULT one included');
SELECT ok((SELECT indisvalid FROM pg_index WHERE indexrelid = 'messenger.ix_call_due'::regclass),
          'so the partitioned ix_call_due is valid');

-- pg_partman makes partitions as the service's role (the table's owner), as its maintenance does.
SET LOCAL ROLE messenger_service;
SET LOCAL TimeZone = 'UTC';
SELECT ok(partman.create_partition_time('messenger.call_sessions',
                                        ARRAY['2099-12-01+00', '2100-01-01+00', '2100-02-01+00']::timestamptz[]),
          'pg_partman makes the partitions of the months the test lives in, after the deploy');
RESET ROLE;
SELECT is(ARRAY(SELECT partition FROM partitions_without_due_index ORDER BY 1), '{}'::text[],
          'each new partition got its ix_call_due from the partitioned index, attached');

-- as_of 2100-01-01 06:00: one overdue Ringing call, one stale Answered call, one live Ringing
-- call, five more overdue Ringing calls for the batch limit, and one overdue Ringing call whose
-- month (2101-05) has no partition yet.
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
VALUES ('00000000-0000-0000-0000-0000000000b1', '00000000-0000-0000-0000-00000000c001',
        '00000000-0000-0000-0000-00000000c002', 'Video', 'Ringing', '2100-01-01 05:00+00', NULL, '2100-01-01 05:00+00'),
       ('00000000-0000-0000-0000-0000000000a1', '00000000-0000-0000-0000-00000000c003',
        '00000000-0000-0000-0000-00000000c004', 'Audio', 'Answered', '2099-12-31 23:00+00',
        '2099-12-31 23:00:05+00', '2100-01-01 03:00+00'),
       ('00000000-0000-0000-0000-0000000000b2', gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing',
        '2100-01-01 05:59:50+00', NULL, '2100-01-01 05:59:50+00');

CREATE TEMP TABLE r1 AS SELECT * FROM messenger.reap_call_timeouts(as_of => '2100-01-01 06:00+00');
SELECT is((SELECT ARRAY[missed_count, failed_count] FROM r1), ARRAY[1, 1],
          'one cycle misses the overdue Ringing call and fails the stale Answered one');
SELECT results_eq(
    $$SELECT c.status, c.end_reason, c.ended_at, c.tableoid::regclass::text
        FROM messenger.call_sessions AS c WHERE c.call_id = '00000000-0000-0000-0000-0000000000b1'$$,
    $$VALUES ('Missed'::text, 'Timeout'::text, '2100-01-01 06:00+00'::timestamptz, 'messenger.call_sessions_p2100_01'::text)$$,
    'the Ringing call is Missed/Timeout, in its month''s partition');
SELECT results_eq(
    $$SELECT kind, target_id, payload, correlation_id FROM messenger.realtime_outbox
       WHERE reference_id = '00000000-0000-0000-0000-0000000000b1'$$,
    $$SELECT 'CallMissed'::text, 'user:00000000-0000-0000-0000-00000000c001'::text,
             '{"callId": "00000000-0000-0000-0000-0000000000b1", "status": "Missed", "mediaType": "Video"}'::jsonb,
             (SELECT run_id FROM r1)$$,
    'the missed call has one CallMissed row to the caller from this run');
SELECT results_eq(
    $$SELECT status, end_reason, duration_seconds, tableoid::regclass::text FROM messenger.call_sessions
       WHERE call_id = '00000000-0000-0000-0000-0000000000a1'$$,
    $$VALUES ('Failed'::text, 'Error'::text, NULL::integer, 'messenger.call_sessions_p2099_12'::text)$$,
    'the stale call is Failed/Error without a duration, in the partition of the month it started');
SELECT results_eq(
    $$SELECT kind, target_id FROM messenger.realtime_outbox
       WHERE reference_id = '00000000-0000-0000-0000-0000000000a1' ORDER BY id$$,
    $$VALUES ('CallEnded'::text, 'user:00000000-0000-0000-0000-00000000c003'::text),
             ('CallEnded'::text, 'user:00000000-0000-0000-0000-00000000c004'::text)$$,
    'the failed call has one CallEnded row per party');
SELECT is((SELECT status FROM messenger.call_sessions WHERE call_id = '00000000-0000-0000-0000-0000000000b2'),
          'Ringing', 'a call inside its answer window keeps ringing');

CREATE TEMP TABLE r2 AS SELECT * FROM messenger.reap_call_timeouts(as_of => '2100-01-01 06:00:15+00');
SELECT is((SELECT ARRAY[missed_count, failed_count] FROM r2), ARRAY[0, 0],
          'a second cycle over the closed calls changes nothing');
SELECT is((SELECT count(*)::integer FROM messenger.realtime_outbox
            WHERE reference_id IN ('00000000-0000-0000-0000-0000000000b1', '00000000-0000-0000-0000-0000000000a1')),
          3, 'and writes no second outbox row');

INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, updated_at)
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing', t, t
  FROM generate_series(1, 5) AS g, LATERAL (SELECT timestamptz '2100-01-01 04:00+00' + g * interval '1 second') AS x (t);
CREATE TEMP TABLE r3 AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 2, as_of => '2100-01-01 06:00:20+00');
CREATE TEMP TABLE r4 AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 2, as_of => '2100-01-01 06:00:25+00');
CREATE TEMP TABLE r5 AS SELECT * FROM messenger.reap_call_timeouts(batch_size => 2, as_of => '2100-01-01 06:00:30+00');
SELECT is(ARRAY[(SELECT missed_count FROM r3), (SELECT missed_count FROM r4), (SELECT missed_count FROM r5)],
          ARRAY[2, 2, 1], 'batch_size 2 drains five overdue calls over three cycles');

INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, updated_at)
VALUES ('00000000-0000-0000-0000-0000000000b3', gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing',
        '2101-05-01 00:00+00', '2101-05-01 00:00+00');
CREATE TEMP TABLE r6 AS SELECT * FROM messenger.reap_call_timeouts(as_of => '2101-05-01 00:01+00');
SELECT results_eq(
    $$SELECT status, tableoid::regclass::text FROM messenger.call_sessions
       WHERE call_id = '00000000-0000-0000-0000-0000000000b3'$$,
    $$VALUES ('Missed'::text, 'messenger.call_sessions_default'::text)$$,
    'a call in a month without a partition lands in the DEFAULT partition and is still reaped');

-- An idle cycle over many live calls scans no partition sequentially.
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio',
       CASE WHEN g % 2 = 0 THEN 'Ringing' ELSE 'Answered' END, t,
       CASE WHEN g % 2 = 1 THEN t END, t
  FROM generate_series(1, 4000) AS g, LATERAL (SELECT timestamptz '2100-01-20 12:00+00' - g * interval '10 milliseconds') AS x (t);
ANALYZE messenger.call_sessions;
CREATE TEMP TABLE seq_before AS
SELECT sum(pg_stat_get_xact_numscans(i.inhrelid))::bigint AS n
  FROM pg_inherits AS i WHERE i.inhparent = 'messenger.call_sessions'::regclass;
CREATE TEMP TABLE r7 AS SELECT * FROM messenger.reap_call_timeouts(as_of => '2100-01-20 12:00+00');
SELECT is((SELECT sum(pg_stat_get_xact_numscans(i.inhrelid))::bigint
             FROM pg_inherits AS i WHERE i.inhparent = 'messenger.call_sessions'::regclass) - (SELECT n FROM seq_before),
          0::bigint, 'an idle cycle scans no partition sequentially');
SELECT is((SELECT ARRAY[missed_count, failed_count] FROM r7), ARRAY[0, 0], 'and closes none of the live calls');

SELECT * FROM finish();
ROLLBACK;
