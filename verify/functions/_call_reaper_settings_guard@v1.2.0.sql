-- Verify call_timeout_reaper:functions/_call_reaper_settings_guard on pg

BEGIN;

DO $$
BEGIN
    IF pg_catalog.has_function_privilege('public', 'messenger._call_reaper_settings_guard()', 'EXECUTE') THEN
        RAISE EXCEPTION 'PUBLIC must not execute messenger._call_reaper_settings_guard()';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_proc
                    WHERE oid = 'messenger._call_reaper_settings_guard()'::regprocedure
                      AND prorettype = 'pg_catalog.trigger'::pg_catalog.regtype
                      AND proconfig @> ARRAY['search_path=pg_catalog, pg_temp']) THEN
        RAISE EXCEPTION 'messenger._call_reaper_settings_guard() must be a trigger function with a pinned search_path';
    END IF;
END
$$;

ROLLBACK;
