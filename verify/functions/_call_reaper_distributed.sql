-- Verify call_timeout_reaper:functions/_call_reaper_distributed on pg
-- It answers, and here, where call_sessions is not distributed, it says so.

BEGIN;

DO $$
BEGIN
    IF messenger._call_reaper_distributed() IS NULL THEN
        RAISE EXCEPTION 'messenger._call_reaper_distributed() gave no answer';
    END IF;
END
$$;

ROLLBACK;
