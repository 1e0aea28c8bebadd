-- Revert call_timeout_reaper:tables/call_sessions from pg
-- Also undoes what the optional sql/partition_call_sessions*.sql added around the table, which
-- lives outside schema messenger and would otherwise outlive it: pg_partman's registration
-- (its nightly maintenance would fail on the dropped table) and its cron job. Archived months
-- in schema messenger_archive and the pg_partman extension stay: they are the DBA's.

BEGIN;

DO $$
DECLARE
    v_partman name;
BEGIN
    IF pg_catalog.to_regclass('cron.job') IS NOT NULL THEN
        PERFORM cron.unschedule(j.jobid) FROM cron.job AS j WHERE j.jobname = 'messenger-call-sessions-partman';
    END IF;
    SELECT n.nspname INTO v_partman
      FROM pg_catalog.pg_extension AS e JOIN pg_catalog.pg_namespace AS n ON n.oid = e.extnamespace
     WHERE e.extname = 'pg_partman';
    IF v_partman IS NOT NULL THEN
        EXECUTE pg_catalog.format('DELETE FROM %I.part_config WHERE parent_table = %L', v_partman, 'messenger.call_sessions');
        EXECUTE pg_catalog.format('DROP TABLE IF EXISTS %I.template_messenger_call_sessions', v_partman);
    END IF;
END
$$;

-- Partitions (the DEFAULT one included) go with their parent; the old table exists only while
-- sql/partition_call_sessions_move.sql has not finished.
DROP TABLE IF EXISTS messenger.call_sessions_unpartitioned;
DROP TABLE IF EXISTS messenger.call_sessions;

COMMIT;
