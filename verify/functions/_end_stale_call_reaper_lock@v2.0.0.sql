-- Verify call_timeout_reaper:functions/_end_stale_call_reaper_lock on pg
-- That it exists (the cast raises otherwise) and reads the holders it records; its grants:
-- tests/pgtap/privileges.sql.

BEGIN;

SELECT 'messenger._end_stale_call_reaper_lock()'::pg_catalog.regprocedure;

DO $$
BEGIN
    IF pg_catalog.strpos(pg_catalog.pg_get_functiondef('messenger._end_stale_call_reaper_lock()'::pg_catalog.regprocedure),
                         'call_reaper_lock_holders') = 0 THEN
        RAISE EXCEPTION '_end_stale_call_reaper_lock must record the holders it sees';
    END IF;
END
$$;

ROLLBACK;
