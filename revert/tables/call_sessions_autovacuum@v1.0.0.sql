-- Revert call_timeout_reaper:tables/call_sessions_autovacuum from pg
-- Resets the two options only while they are the deploy's values: settings the messenger
-- service had before, or has set since, stay.

BEGIN;

DO $$
BEGIN
    IF (SELECT c.reloptions @> ARRAY['autovacuum_vacuum_scale_factor=0.01', 'autovacuum_vacuum_threshold=1000']
          FROM pg_catalog.pg_class AS c
         WHERE c.oid = 'messenger.call_sessions'::regclass AND c.relkind = 'r') THEN
        ALTER TABLE messenger.call_sessions
            RESET (autovacuum_vacuum_scale_factor, autovacuum_vacuum_threshold);
    END IF;
END
$$;

COMMIT;
