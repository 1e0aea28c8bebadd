-- Deploy call_timeout_reaper:functions/call_reaper_lock_key to pg

BEGIN;

-- messenger.call_reaper_lock_key() RETURNS bigint
--
-- The reaper's single-runner lock, the one place its key is written: a cycle takes
-- pg_try_advisory_xact_lock(messenger.call_reaper_lock_key()) and so does the purge; the
-- warden and call_reaper_status find the holder in pg_locks, where a bigint key shows as
-- classid = key >> 32, objid = key & 0xffffffff, objsubid = 1. The value is the bytes of
-- 'callreap' (classid 1667329132, objid 1919246704), unlikely to collide with another
-- application's advisory locks.
-- LANGUAGE sql, IMMUTABLE: inlined as a constant. EXECUTE stays granted to PUBLIC like
-- call_due_key: it reads nothing, and any session (a DBA, a monitoring query) may ask which
-- key to look for. The functions that call it were deployed before it in sqitch.plan; they
-- resolve it when they run.
CREATE OR REPLACE FUNCTION messenger.call_reaper_lock_key()
RETURNS bigint
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
RETURN 7161124095527313776;

COMMENT ON FUNCTION messenger.call_reaper_lock_key() IS
$$The key of the call-timeout reaper's single-runner advisory lock (pg_try_advisory_xact_lock); in pg_locks classid = key >> 32, objid = key & 4294967295, objsubid = 1.$$;

COMMIT;
