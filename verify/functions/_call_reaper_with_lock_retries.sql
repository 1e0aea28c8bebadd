-- Verify call_timeout_reaper:functions/_call_reaper_with_lock_retries on pg

BEGIN;

SELECT 1 / (messenger._call_reaper_with_lock_retries('SELECT 1') = 1)::integer;

ROLLBACK;
