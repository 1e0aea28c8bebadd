-- Verify call_timeout_reaper:functions/_reap_first_passed on pg
-- It exists, takes the pair's calls relation and walks ix_call_due by (started_at, call_id).

BEGIN;

DO $$
BEGIN
    IF (SELECT p.prosrc LIKE '%call_due_key%' OR p.prosrc NOT LIKE '%s.started_at, s.call_id%' FROM pg_catalog.pg_proc AS p
         WHERE p.oid = 'messenger._reap_first_passed(text, timestamptz, uuid, timestamptz, uuid, uuid[], boolean, regclass)'::pg_catalog.regprocedure) THEN
        RAISE EXCEPTION 'messenger._reap_first_passed does not walk ix_call_due by started_at';
    END IF;
END
$$;

ROLLBACK;
