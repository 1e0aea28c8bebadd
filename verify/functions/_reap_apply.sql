-- Verify call_timeout_reaper:functions/_reap_apply on pg

BEGIN;

DO $$
BEGIN
    IF NOT coalesce(pg_catalog.has_function_privilege('messenger_call_reaper_owner',
           'messenger._reap_apply(text, uuid[], timestamptz[], timestamptz[], uuid, timestamptz)', 'EXECUTE'), false) THEN
        RAISE EXCEPTION '_reap_apply must be executable by its owner';
    END IF;
    IF NOT coalesce(NOT pg_catalog.has_function_privilege('public',
           'messenger._reap_apply(text, uuid[], timestamptz[], timestamptz[], uuid, timestamptz)', 'EXECUTE'), false) THEN
        RAISE EXCEPTION '_reap_apply must not be executable by PUBLIC';
    END IF;
END
$$;

ROLLBACK;
