-- Verify call_timeout_reaper:types/call_reaper_cycle on pg

BEGIN;

SELECT (NULL::messenger.call_reaper_cycle).run_id,
       (NULL::messenger.call_reaper_cycle).poisoned_count,
       (NULL::messenger.call_reaper_cycle).result;

ROLLBACK;
