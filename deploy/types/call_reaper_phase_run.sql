-- Deploy call_timeout_reaper:types/call_reaper_phase_run to pg
-- One phase of one cycle on one relation pair, as messenger._reap_pair sets it up per row of
-- messenger.call_reaper_phases(): what _reap_phase, _reap_lanes and _reap_close take, named once
-- instead of the same twelve values passed down three signatures. calls and outbox are the pair
-- the phase reads and writes: messenger.call_sessions and messenger.realtime_outbox themselves
-- (the default pair, static statements), or another pair of their shape (a colocated shard
-- pair on Citus; the same statements through EXECUTE).

BEGIN;

CREATE TYPE messenger.call_reaper_phase_run AS (
    phase        text,          -- a phase of call_reaper_phases()
    run_id       uuid,          -- the cycle's run id (the outbox rows' correlation_id)
    as_of        timestamptz,   -- the cycle's as_of
    timeout      interval,      -- the phase's window (the setting its timeout_setting names)
    batch        integer,       -- most calls the phase claims
    fresh        interval,      -- width of the fresh lane (the polling interval)
    backoff      interval,      -- quarantine backoff, doubling per failure ...
    backoff_max  interval,      -- ... up to this; also how long a claim floor is trusted
    budget       integer,       -- most subtransactions the phase may open
    after_run    uuid,          -- the previous cycle of the caller's drain or catch-up loop, or NULL
    calls        regclass,      -- the calls relation of the pair (messenger.call_sessions by default)
    outbox       regclass       -- the outbox relation of the pair (messenger.realtime_outbox by default)
);

COMMENT ON TYPE messenger.call_reaper_phase_run IS
    'Private: one reaper phase of one cycle (phase, run id, as_of, window, batch, fresh lane, backoffs, subtransaction budget, previous run of a loop, the calls and outbox relations of its pair), what _reap_phase, _reap_lanes and _reap_close take.';

COMMIT;
