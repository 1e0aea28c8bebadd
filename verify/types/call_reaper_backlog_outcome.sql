-- Verify call_timeout_reaper:types/call_reaper_backlog_outcome on pg

BEGIN;

SELECT (NULL::messenger.call_reaper_backlog_outcome).ids,
       (NULL::messenger.call_reaper_backlog_outcome)."full",
       (NULL::messenger.call_reaper_backlog_outcome).deferred_key,
       (NULL::messenger.call_reaper_backlog_outcome).talking_since;

ROLLBACK;
