-- Verify call_timeout_reaper:cron/call_reaper_warden on pg

BEGIN;

DO $$
DECLARE
    j cron.job;
BEGIN
    SELECT * INTO STRICT j FROM cron.job
     WHERE jobname = 'messenger-call-reaper-warden' AND database = current_database();
    IF j.command <> 'CALL messenger.run_call_reaper_warden()' OR j.schedule <> '* * * * *' THEN
        RAISE EXCEPTION 'the warden job must CALL messenger.run_call_reaper_warden() every minute';
    END IF;
    IF NOT (SELECT r.rolsuper FROM pg_catalog.pg_roles AS r WHERE r.rolname = j.username) THEN
        RAISE EXCEPTION 'the warden job must run as a superuser (it may end a superuser''s backend)';
    END IF;
END
$$;

ROLLBACK;
