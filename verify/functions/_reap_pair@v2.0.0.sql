-- Verify call_timeout_reaper:functions/_reap_pair on pg
-- It exists, runs as its owner, and the job role may not run it (tests/pgtap/privileges.sql
-- checks the rest of its grants).

BEGIN;

DO $$
DECLARE
    v_proc regprocedure := 'messenger._reap_pair(regclass, regclass, uuid, timestamptz, jsonb, integer, uuid)';
BEGIN
    IF NOT (SELECT p.prosecdef FROM pg_catalog.pg_proc AS p WHERE p.oid = v_proc) THEN
        RAISE EXCEPTION 'messenger._reap_pair is not SECURITY DEFINER';
    END IF;
    IF pg_catalog.has_function_privilege('messenger_call_reaper', v_proc, 'EXECUTE') THEN
        RAISE EXCEPTION 'the job role messenger_call_reaper may run messenger._reap_pair';
    END IF;
END
$$;

ROLLBACK;
