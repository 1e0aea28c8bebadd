-- Deploy call_timeout_reaper:types/call_reaper_phase_run to pg
-- One phase of one cycle, as messenger._reap_cycle sets it up per row of
-- messenger.call_reaper_phases(): what _reap_phase, _reap_lanes and _reap_close take, named once
-- instead of the same ten values passed down three signatures.

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
    after_run    uuid           -- the previous cycle of the caller's drain or catch-up loop, or NULL
);

COMMENT ON TYPE messenger.call_reaper_phase_run IS
    'Private: one reaper phase of one cycle (phase, run id, as_of, window, batch, fresh lane, backoffs, subtransaction budget, previous run of a loop), what _reap_phase, _reap_lanes and _reap_close take.';

COMMIT;
