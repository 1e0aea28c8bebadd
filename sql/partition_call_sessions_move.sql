-- Step 2 of 2 of partitioning messenger.call_sessions (step 1: sql/partition_call_sessions.sql):
-- moves the terminal history left in messenger.call_sessions_unpartitioned into its monthly
-- partitions with pg_partman's partition_data_proc, one month per transaction, newest month
-- first (recent history is what the application reads most), then drops the emptied table.
--
-- Run as a superuser, OUTSIDE a transaction (the procedure commits after each month):
--     psql -v ON_ERROR_STOP=1 -f sql/partition_call_sessions_move.sql
-- Writers are never blocked by the moved rows: nobody writes terminal calls, and every active
-- call already moved in step 1. Each batch takes a brief lock on the parent to create its
-- month's partition. Interrupted (Ctrl-C, a lost connection), it is simply run again: months
-- already moved are committed, the rest is still in call_sessions_unpartitioned.
-- Until it finishes, a query for an old call may not find it.

\if :{?batches}
\else
\set batches 0
\endif

SELECT pg_catalog.to_regclass('messenger.call_sessions_unpartitioned') IS NOT NULL AS has_history \gset
\if :has_history
-- The batches find their month by started_at; the old table lost its other indexes in step 1.
CREATE INDEX IF NOT EXISTS call_sessions_unpartitioned_started_at
    ON messenger.call_sessions_unpartitioned (started_at);
-- p_batch => 0 moves every month; -v batches=N stops after N months (the tests use it).
CALL partman.partition_data_proc('messenger.call_sessions',
                                 p_batch        => :batches,
                                 p_wait         => 0,
                                 p_source_table => 'messenger.call_sessions_unpartitioned',
                                 p_order        => 'DESC');
SELECT NOT EXISTS (SELECT FROM messenger.call_sessions_unpartitioned) AS history_moved \gset
\if :history_moved
DROP TABLE messenger.call_sessions_unpartitioned;
\echo messenger.call_sessions_unpartitioned is empty and dropped
\else
\echo messenger.call_sessions_unpartitioned still holds rows: run this script again
\endif
-- Autovacuum never analyzes a partitioned parent.
ANALYZE messenger.call_sessions;
\else
\echo no messenger.call_sessions_unpartitioned: nothing to move
\endif
