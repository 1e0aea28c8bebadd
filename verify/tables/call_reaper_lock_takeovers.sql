-- Verify call_timeout_reaper:tables/call_reaper_lock_takeovers on pg

BEGIN;

SELECT id, ended_at, pid, role_name, action, reason, held_for, signalled
  FROM messenger.call_reaper_lock_takeovers
 WHERE false;

ROLLBACK;
