-- Deploy call_timeout_reaper:tables/call_sessions_autovacuum to pg

BEGIN;

-- Why: a drain leaves one dead entry per closed call at the low end of ix_call_due, exactly
-- where every cycle's range scans start, and they are only removed by a VACUUM. With the
-- default scale factor (0.2) autovacuum waits for a fifth of call_sessions to be dead, which a
-- backlog of any size short of that never reaches: the idle cycle then reads every dead entry's
-- page until ordinary traffic has piled up enough dead rows (docs/benchmarks.md, "Idle after a
-- drain"). One per cent plus a thousand rows makes the next autovacuum round pick the table up
-- after a large drain, without a manual VACUUM.
-- The table is the messenger service's: its own vacuum settings win. These are set only when it
-- has neither, and recorded in messenger.call_reaper_footprint as the reaper's, so that the
-- revert resets exactly the ones still holding the reaper's value (a value the service set
-- since stays). Setting autovacuum options takes SHARE UPDATE EXCLUSIVE: writers never wait
-- for it.
-- A partitioned call_sessions cannot carry autovacuum settings on its parent; its partitions
-- are vacuumed by their own, smaller size.
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_catalog.pg_class AS c
                WHERE c.oid = 'messenger.call_sessions'::pg_catalog.regclass AND c.relkind = 'r'
                  AND NOT EXISTS (SELECT FROM pg_catalog.unnest(c.reloptions) AS o (option)
                                   WHERE o.option LIKE 'autovacuum\_vacuum\_scale\_factor=%'
                                      OR o.option LIKE 'autovacuum\_vacuum\_threshold=%')) THEN
        ALTER TABLE messenger.call_sessions
            SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000);
        INSERT INTO messenger.call_reaper_footprint (kind, target, item, set_by)
        SELECT 'reloption', 'TABLE messenger.call_sessions', o.option, 'tables/call_sessions_autovacuum'
          FROM pg_catalog.unnest(ARRAY['autovacuum_vacuum_scale_factor=0.01', 'autovacuum_vacuum_threshold=1000']) AS o (option);
    ELSE
        RAISE NOTICE 'messenger.call_sessions keeps its own autovacuum settings (or is partitioned)';
    END IF;
END
$$;

COMMIT;
