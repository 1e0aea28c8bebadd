-- Deploy call_timeout_reaper:sequences/call_reaper_idle_cycle_at to pg

BEGIN;

-- When the last cycle on the clock that found nothing to do finished, in Unix milliseconds
-- (messenger._reap_ledger setvals it). Unlogged for the reason messenger.call_reaper_idle_cycles
-- is: messenger.call_reaper_metrics() takes the later of it and the ledger's last run for
-- last_run_at and last_success_at, so the alert on a stale last success keeps seeing an idle
-- reaper as alive. After a crash it starts again at 1 (1970), which the ledger's runs outweigh.
CREATE UNLOGGED SEQUENCE messenger.call_reaper_idle_cycle_at AS bigint;

COMMENT ON SEQUENCE messenger.call_reaper_idle_cycle_at IS
    'When the last idle cycle on the clock finished, in Unix milliseconds, kept without WAL. Unlogged: starts again after a crash or a failover.';
GRANT SELECT, UPDATE ON SEQUENCE messenger.call_reaper_idle_cycle_at TO messenger_call_reaper_owner;
-- messenger.call_reaper_status() runs with its caller's rights.
GRANT SELECT ON SEQUENCE messenger.call_reaper_idle_cycle_at TO messenger_call_reaper_operator;

COMMIT;
