-- Revert call_timeout_reaper:tables/call_sessions_autovacuum from pg

BEGIN;

DO $$
BEGIN
    IF (SELECT c.relkind FROM pg_catalog.pg_class AS c
         WHERE c.oid = 'messenger.call_sessions'::regclass) = 'r' THEN
        ALTER TABLE messenger.call_sessions
            RESET (autovacuum_vacuum_scale_factor, autovacuum_vacuum_threshold);
    END IF;
END
$$;

COMMIT;
