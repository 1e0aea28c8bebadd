-- Verify call_timeout_reaper:functions/call_reaper_metrics on pg

BEGIN;

-- Exactly one row, or the exporter has nothing to publish; the lock columns answer.
SELECT 1 / (count(*) = 1)::integer FROM messenger.call_reaper_metrics();
SELECT 1 / (lock_held_seconds >= 0 AND lock_warden_can_end IS NOT NULL AND lock_ttl > interval '0')::integer
  FROM messenger.call_reaper_metrics();
-- A backlog column whose phase the phase table does not name would be NULL.
SELECT 1 / (backlog_ring_timeout >= 0 AND backlog_stale_answered >= 0)::integer
  FROM messenger.call_reaper_metrics();

DO $$
BEGIN
    IF NOT pg_catalog.has_function_privilege('messenger_call_reaper_monitor',
                                             'messenger.call_reaper_metrics()', 'EXECUTE') THEN
        RAISE EXCEPTION 'messenger_call_reaper_monitor must execute messenger.call_reaper_metrics()';
    END IF;
END
$$;

ROLLBACK;
