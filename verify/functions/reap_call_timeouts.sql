-- Verify call_timeout_reaper:functions/reap_call_timeouts on pg
-- That it exists (the cast raises otherwise) and is the reworked one, which updates the
-- counters row by its key; its grants: tests/pgtap/privileges.sql.

BEGIN;

DO $$
BEGIN
    IF strpos(pg_catalog.pg_get_functiondef('messenger.reap_call_timeouts(integer, interval, interval, timestamptz)'::pg_catalog.regprocedure),
              'WHERE k.singleton') = 0 THEN
        RAISE EXCEPTION 'messenger.reap_call_timeouts is not the reworked definition (counters not updated by key)';
    END IF;
END
$$;

ROLLBACK;
