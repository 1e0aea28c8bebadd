-- Verify call_timeout_reaper:tables/call_reaper_lock_holders on pg

BEGIN;

SELECT pid, backend_start, role_name, held_since, warden_can_end, given_up, first_seen_at
  FROM messenger.call_reaper_lock_holders
 WHERE false;

DO $$
BEGIN
    IF NOT pg_catalog.has_table_privilege('messenger_call_reaper_owner',
                                          'messenger.call_reaper_lock_holders', 'SELECT') THEN
        RAISE EXCEPTION 'messenger_call_reaper_owner must read messenger.call_reaper_lock_holders';
    END IF;
END
$$;

ROLLBACK;
