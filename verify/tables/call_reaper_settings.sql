-- Verify call_timeout_reaper:tables/call_reaper_settings on pg

BEGIN;

SELECT singleton, batch_size, ring_timeout, stale_timeout, polling_interval, lock_ttl, poison_backoff,
       poison_backoff_max, retention, paused, allow_future_as_of, wake_at_deadline
  FROM messenger.call_reaper_settings
 WHERE false;

ROLLBACK;
