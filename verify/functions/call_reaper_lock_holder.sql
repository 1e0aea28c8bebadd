-- Verify call_timeout_reaper:functions/call_reaper_lock_holder on pg
-- It answers (no row while the lock is free); the metrics function's owner may call it.

BEGIN;

SELECT pid, backend_start, role_name, state, xact_start, is_cycle, held_since, recorded, warden_can_end
  FROM messenger.call_reaper_lock_holder();

DO $$
BEGIN
    IF NOT pg_catalog.has_function_privilege('messenger_call_reaper_owner',
                                             'messenger.call_reaper_lock_holder()', 'EXECUTE') THEN
        RAISE EXCEPTION 'messenger_call_reaper_owner must execute messenger.call_reaper_lock_holder()';
    END IF;
END
$$;

ROLLBACK;
