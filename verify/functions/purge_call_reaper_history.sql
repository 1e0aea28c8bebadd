-- Verify call_timeout_reaper:functions/purge_call_reaper_history on pg

BEGIN;

DO $$
DECLARE
    f pg_catalog.pg_proc;
BEGIN
    SELECT * INTO STRICT f FROM pg_catalog.pg_proc
     WHERE oid = 'messenger.purge_call_reaper_history(timestamptz, integer)'::regprocedure;
    IF NOT coalesce(NOT f.prosecdef, false) THEN
        RAISE EXCEPTION 'purge_call_reaper_history must be SECURITY INVOKER (its caller''s rights decide)';
    END IF;
    IF pg_catalog.has_function_privilege('messenger_call_reaper', f.oid, 'EXECUTE') THEN
        RAISE EXCEPTION 'messenger_call_reaper must not be able to purge history with any cutoff';
    END IF;
    IF NOT coalesce(NOT pg_catalog.has_function_privilege('public', f.oid, 'EXECUTE'), false) THEN
        RAISE EXCEPTION 'PUBLIC must not be able to purge reaper history';
    END IF;
END
$$;

ROLLBACK;
