-- Deploy call_timeout_reaper:sequences/call_reaper_idle_cycles to pg

BEGIN;

-- How many cycles on the clock found nothing to do (messenger._reap_ledger): such a cycle writes
-- no ledger row and takes this sequence's next value instead. Unlogged, so a nextval writes no
-- WAL and needs no transaction id: a server where nothing rings writes nothing of the reaper's.
-- The price, by design: a crash or a failover starts it again from 1 (a counter reset to
-- Prometheus, which rate() and increase() expect), and a standby cannot read it
-- (messenger.call_reaper_metrics() then reports NULL).
CREATE UNLOGGED SEQUENCE messenger.call_reaper_idle_cycles AS bigint;

COMMENT ON SEQUENCE messenger.call_reaper_idle_cycles IS
    'Idle cycles on the clock (nothing to do; no ledger row), counted without WAL: exported as run_total{result="idle"}. Unlogged: starts again after a crash or a failover.';
GRANT SELECT, UPDATE ON SEQUENCE messenger.call_reaper_idle_cycles TO messenger_call_reaper_owner;
-- messenger.call_reaper_status() runs with its caller's rights.
GRANT SELECT ON SEQUENCE messenger.call_reaper_idle_cycles TO messenger_call_reaper_operator;

COMMIT;
