-- Verify call_timeout_reaper:functions/_preview_local_pairs on pg
-- It exists, runs as its owner, and the job role may not run it.

BEGIN;

DO $$
DECLARE
    v_proc regprocedure := 'messenger._preview_local_pairs(timestamptz, jsonb)';
BEGIN
    IF NOT (SELECT p.prosecdef FROM pg_catalog.pg_proc AS p WHERE p.oid = v_proc) THEN
        RAISE EXCEPTION 'messenger._preview_local_pairs is not SECURITY DEFINER';
    END IF;
    IF pg_catalog.has_function_privilege('messenger_call_reaper', v_proc, 'EXECUTE') THEN
        RAISE EXCEPTION 'the job role messenger_call_reaper may run messenger._preview_local_pairs';
    END IF;
END
$$;

ROLLBACK;
