-- Verify call_timeout_reaper:functions/_reap_apply on pg

BEGIN;

DO $$
BEGIN
    ASSERT pg_catalog.has_function_privilege('messenger_call_reaper_owner',
        'messenger._reap_apply(text, uuid[], timestamptz[], timestamptz[], uuid, timestamptz)', 'EXECUTE'),
        '_reap_apply must be executable by its owner';
    ASSERT NOT pg_catalog.has_function_privilege('public',
        'messenger._reap_apply(text, uuid[], timestamptz[], timestamptz[], uuid, timestamptz)', 'EXECUTE'),
        '_reap_apply must not be executable by PUBLIC';
END
$$;

ROLLBACK;
