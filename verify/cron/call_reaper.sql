-- Verify call_timeout_reaper:cron/call_reaper on pg

BEGIN;

DO $$
DECLARE
    j cron.job;
BEGIN
    SELECT * INTO STRICT j FROM cron.job
     WHERE jobname = 'messenger-call-timeout-reaper' AND username = 'messenger_call_reaper';
    ASSERT j.command = 'CALL messenger.run_call_reaper_ticks()',
        'the reaper job must CALL messenger.run_call_reaper_ticks()';
    ASSERT j.database = current_database(), 'the reaper job must run in this database';
    ASSERT NOT (SELECT r.rolsuper FROM pg_catalog.pg_roles AS r WHERE r.rolname = j.username),
        'the reaper job must not run as a superuser';
    ASSERT pg_catalog.has_schema_privilege('messenger_call_reaper', 'cron', 'USAGE'),
        'messenger_call_reaper must be able to read its own cron.job row';
END
$$;

ROLLBACK;
