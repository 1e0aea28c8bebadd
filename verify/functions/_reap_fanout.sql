-- Verify call_timeout_reaper:functions/_reap_fanout on pg
-- It exists, runs as its owner, and the job role may not run it.

BEGIN;

DO $$
DECLARE
    v_proc regprocedure := 'messenger._reap_fanout(uuid, timestamptz, jsonb, integer)';
BEGIN
    IF NOT (SELECT p.prosecdef FROM pg_catalog.pg_proc AS p WHERE p.oid = v_proc) THEN
        RAISE EXCEPTION 'messenger._reap_fanout is not SECURITY DEFINER';
    END IF;
    IF pg_catalog.has_function_privilege('messenger_call_reaper', v_proc, 'EXECUTE') THEN
        RAISE EXCEPTION 'the job role messenger_call_reaper may run messenger._reap_fanout';
    END IF;
END
$$;

ROLLBACK;
