-- Verify call_timeout_reaper:procedures/_reap_local_pairs on pg
-- It exists, is owned by the reaper's owner, and the job role may not run it.

BEGIN;

DO $$
DECLARE
    v_proc regprocedure := 'messenger._reap_local_pairs(uuid, timestamptz, jsonb, integer, jsonb)';
BEGIN
    IF (SELECT p.proowner::regrole::text FROM pg_catalog.pg_proc AS p WHERE p.oid = v_proc) <> 'messenger_call_reaper_owner' THEN
        RAISE EXCEPTION 'messenger._reap_local_pairs is not owned by messenger_call_reaper_owner';
    END IF;
    IF pg_catalog.has_function_privilege('messenger_call_reaper', v_proc, 'EXECUTE') THEN
        RAISE EXCEPTION 'the job role messenger_call_reaper may run messenger._reap_local_pairs';
    END IF;
END
$$;

ROLLBACK;
