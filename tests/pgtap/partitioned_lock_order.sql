-- Needs the partitioned stand-in: scripts/test-in-cluster runs this file in a database of its own
-- whose call_sessions stand-in/messenger_service.sql made with -v partitioned=on.
-- The cycle never holds a lock on a partition of call_sessions without one on call_sessions
-- itself. The product's DETACH PARTITION (pg_partman's retention) locks the parent first, then
-- the partition; a cycle holding the partition alone would then wait for the parent behind it,
-- a deadlock that fails the product's command. The lanes read the partitions' VACUUM count
-- first thing in a cycle: they must lock none of them.
BEGIN;
SELECT plan(3);
-- The routines called by themselves below run with the cycle's planner settings.
\ir fixtures/cycle_settings.sql

-- Partitions of call_sessions this transaction holds a lock on while it holds none on the parent.
CREATE FUNCTION pg_temp.partitions_locked_alone() RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*)
      FROM pg_locks AS l
      JOIN pg_inherits AS i ON i.inhrelid = l.relation
     WHERE l.pid = pg_backend_pid() AND l.locktype = 'relation'
       AND i.inhparent = 'messenger.call_sessions'::regclass
       AND NOT EXISTS (SELECT FROM pg_locks AS p
                        WHERE p.pid = pg_backend_pid() AND p.locktype = 'relation'
                          AND p.relation = 'messenger.call_sessions'::regclass)
$$;

SELECT ok((SELECT count(*) FROM pg_inherits WHERE inhparent = 'messenger.call_sessions'::regclass) > 1,
          'call_sessions has partitions');
SELECT ok((messenger._reap_lanes(ROW('ring_timeout', gen_random_uuid(), now(), '45 seconds', 200, '15 seconds',
                                     '1 minute', '1 hour', 63, NULL, 'messenger.call_sessions',
                                     'messenger.realtime_outbox')::messenger.call_reaper_phase_run)).vacuums IS NOT NULL,
          'the lanes read the VACUUM count of the partition tree');
SELECT is(pg_temp.partitions_locked_alone(), 0::bigint,
          'and hold no lock on a partition without one on call_sessions');

SELECT * FROM finish();
ROLLBACK;
