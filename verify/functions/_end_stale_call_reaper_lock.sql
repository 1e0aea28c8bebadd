-- Verify call_timeout_reaper:functions/_end_stale_call_reaper_lock on pg

BEGIN;

DO $$
BEGIN
    IF pg_catalog.has_function_privilege('public', 'messenger._end_stale_call_reaper_lock()', 'EXECUTE')
       OR pg_catalog.has_function_privilege('messenger_call_reaper', 'messenger._end_stale_call_reaper_lock()', 'EXECUTE') THEN
        RAISE EXCEPTION 'neither PUBLIC nor the job role may end other backends';
    END IF;
    IF (SELECT p.prosecdef FROM pg_catalog.pg_proc AS p
         WHERE p.oid = 'messenger._end_stale_call_reaper_lock()'::regprocedure) THEN
        RAISE EXCEPTION '_end_stale_call_reaper_lock must be SECURITY INVOKER (its caller''s right to signal decides)';
    END IF;
END
$$;

ROLLBACK;
