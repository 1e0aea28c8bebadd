-- Verify call_timeout_reaper:functions/_call_reaper_quarantine_released on pg

BEGIN;

DO $$
BEGIN
    IF pg_catalog.has_function_privilege('public', 'messenger._call_reaper_quarantine_released()', 'EXECUTE') THEN
        RAISE EXCEPTION '_call_reaper_quarantine_released must not be executable by PUBLIC';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_proc
                    WHERE oid = 'messenger._call_reaper_quarantine_released()'::regprocedure
                      AND prosecdef
                      AND proowner = 'messenger_call_reaper_owner'::regrole
                      AND proconfig @> ARRAY['search_path=pg_catalog, pg_temp']) THEN
        RAISE EXCEPTION '_call_reaper_quarantine_released must be SECURITY DEFINER, owned by messenger_call_reaper_owner, with a pinned search_path';
    END IF;
END
$$;

ROLLBACK;
