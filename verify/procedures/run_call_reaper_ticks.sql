-- Verify call_timeout_reaper:procedures/run_call_reaper_ticks on pg

BEGIN;

DO $$
DECLARE
    p pg_catalog.pg_proc;
BEGIN
    SELECT * INTO STRICT p FROM pg_catalog.pg_proc
     WHERE oid = 'messenger.run_call_reaper_ticks(timestamptz)'::regprocedure;
    ASSERT p.prokind = 'p', 'run_call_reaper_ticks must be a procedure';
    ASSERT NOT p.prosecdef, 'run_call_reaper_ticks must be SECURITY INVOKER (it COMMITs)';
    ASSERT p.proconfig IS NULL, 'run_call_reaper_ticks must have no SET clause (it COMMITs)';
    ASSERT pg_catalog.has_function_privilege('messenger_call_reaper', p.oid, 'EXECUTE'),
        'messenger_call_reaper must be able to CALL run_call_reaper_ticks';
    ASSERT NOT pg_catalog.has_function_privilege('public', p.oid, 'EXECUTE'),
        'PUBLIC must not be able to CALL run_call_reaper_ticks';
    ASSERT pg_catalog.has_column_privilege('messenger_call_reaper', 'messenger.call_reaper_settings',
                                           'polling_interval', 'SELECT'),
        'messenger_call_reaper must be able to read polling_interval';
    IF NOT pg_catalog.has_column_privilege('messenger_call_reaper', 'messenger.call_reaper_settings',
                                           'batch_size', 'SELECT') THEN
        RAISE EXCEPTION 'messenger_call_reaper must be able to read batch_size (catch-up)';
    END IF;
END
$$;

ROLLBACK;
