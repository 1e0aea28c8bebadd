-- Revert call_timeout_reaper:functions/call_reaper_citus_prepare from pg
-- On a Citus coordinator, the workers' copies it made go too: only tables that carry its comment,
-- never a worker's table of the same name that it did not make.

BEGIN;

DO $revert$
BEGIN
    IF pg_catalog.to_regproc('pg_catalog.run_command_on_workers') IS NOT NULL THEN
        PERFORM pg_catalog.run_command_on_workers($w$DO $d$
            DECLARE t regclass;
            BEGIN
                FOR t IN SELECT c.oid FROM pg_catalog.pg_class AS c
                          WHERE c.relnamespace = pg_catalog.to_regnamespace('messenger')
                            AND c.relkind = 'r'
                            AND pg_catalog.obj_description(c.oid, 'pg_class') = 'the reaper''s worker copy (messenger.call_reaper_citus_prepare)' LOOP
                    EXECUTE format('DROP TABLE %s', t);
                END LOOP;
            END $d$$w$, false);
    END IF;
END
$revert$;
DROP FUNCTION IF EXISTS messenger.call_reaper_citus_prepare();

COMMIT;
