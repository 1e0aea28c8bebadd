-- Verify call_timeout_reaper:types/call_reaper_phase_run on pg

BEGIN;

SELECT (NULL::messenger.call_reaper_phase_run).phase,
       (NULL::messenger.call_reaper_phase_run).timeout,
       (NULL::messenger.call_reaper_phase_run).after_run,
       (NULL::messenger.call_reaper_phase_run).calls,
       (NULL::messenger.call_reaper_phase_run).outbox;

ROLLBACK;
