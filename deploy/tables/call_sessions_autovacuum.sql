-- Deploy call_timeout_reaper:tables/call_sessions_autovacuum to pg

BEGIN;

-- Why: a drain leaves one dead entry per closed call at the low end of ix_call_due
-- and ix_call_active, exactly where every cycle's range scans start, and
-- they are only removed by a VACUUM. With the default scale factor (0.2) autovacuum waits for a
-- fifth of call_sessions to be dead, which a backlog of any size short of that never reaches:
-- the idle cycle then reads every dead entry's page until ordinary traffic has piled up enough
-- dead rows (figures: docs/benchmarks.md, "Idle after a drain"). One per cent plus a thousand rows makes the next autovacuum round pick the table up after a large
-- drain, without a manual VACUUM.
-- A partitioned call_sessions (sql/partition_call_sessions.sql) cannot carry autovacuum
-- settings on its parent; its partitions are vacuumed by their own, smaller size.
DO $$
BEGIN
    IF (SELECT c.relkind FROM pg_catalog.pg_class AS c
         WHERE c.oid = 'messenger.call_sessions'::regclass) = 'r' THEN
        ALTER TABLE messenger.call_sessions
            SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000);
    END IF;
END
$$;

COMMIT;
