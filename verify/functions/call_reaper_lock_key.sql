-- Verify call_timeout_reaper:functions/call_reaper_lock_key on pg

BEGIN;

DO $$
BEGIN
    IF messenger.call_reaper_lock_key() IS NULL
       OR (SELECT provolatile FROM pg_catalog.pg_proc
            WHERE oid = 'messenger.call_reaper_lock_key()'::regprocedure) <> 'i' THEN
        RAISE EXCEPTION 'messenger.call_reaper_lock_key() must be an IMMUTABLE key';
    END IF;
END
$$;

ROLLBACK;
