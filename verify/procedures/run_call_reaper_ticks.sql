-- Verify call_timeout_reaper:procedures/run_call_reaper_ticks on pg

BEGIN;

DO $$
DECLARE
    p pg_catalog.pg_proc;
BEGIN
    SELECT * INTO STRICT p FROM pg_catalog.pg_proc
     WHERE oid = 'messenger.run_call_reaper_ticks(timestamptz)'::regprocedure;
    IF NOT coalesce(p.prokind = 'p', false) THEN
        RAISE EXCEPTION 'run_call_reaper_ticks must be a procedure';
    END IF;
    IF NOT coalesce(NOT p.prosecdef, false) THEN
        RAISE EXCEPTION 'run_call_reaper_ticks must be SECURITY INVOKER (it COMMITs)';
    END IF;
    IF NOT coalesce(p.proconfig IS NULL, false) THEN
        RAISE EXCEPTION 'run_call_reaper_ticks must have no SET clause (it COMMITs)';
    END IF;
    IF NOT coalesce(pg_catalog.has_function_privilege('messenger_call_reaper', p.oid, 'EXECUTE'), false) THEN
        RAISE EXCEPTION 'messenger_call_reaper must be able to CALL run_call_reaper_ticks';
    END IF;
    IF NOT coalesce(NOT pg_catalog.has_function_privilege('public', p.oid, 'EXECUTE'), false) THEN
        RAISE EXCEPTION 'PUBLIC must not be able to CALL run_call_reaper_ticks';
    END IF;
    IF NOT coalesce(pg_catalog.has_column_privilege('messenger_call_reaper', 'messenger.call_reaper_settings',
                                              'polling_interval', 'SELECT')
                    AND pg_catalog.has_column_privilege('messenger_call_reaper', 'messenger.call_reaper_settings',
                                                        'paused', 'SELECT'), false) THEN
        RAISE EXCEPTION 'messenger_call_reaper must be able to read polling_interval and paused';
    END IF;
    IF NOT coalesce(pg_catalog.has_column_privilege('messenger_call_reaper', 'messenger.call_reaper_settings',
                                                    'batch_size', 'SELECT'), false) THEN
        RAISE EXCEPTION 'messenger_call_reaper must be able to read batch_size (catch-up)';
    END IF;
END
$$;

ROLLBACK;
