-- Deploy call_timeout_reaper:types/call_reaper_lanes to pg
-- Where one phase's lanes lie for a cycle, and what its claim floor holds: the row
-- messenger._reap_lanes returns, read by messenger._reap_claim and preview_call_timeouts (a
-- named type rather than 16 OUT parameters, so the callers declare what they read).

BEGIN;

CREATE TYPE messenger.call_reaper_lanes AS (
    status          text,          -- the phase's status (call_reaper_phases())
    cutoff          timestamptz,   -- a call is due when its due key <= cutoff
    fresh_from      timestamptz,   -- the fresh lane: due keys after this, up to cutoff
    backlog_key     timestamptz,   -- the backlog lane: (due key, call_id) from here ...
    backlog_id      uuid,          -- ... up to fresh_from
    backlog_empty   boolean,       -- nothing but quarantined calls up to fresh_from
    quarantined     boolean,       -- the quarantine has a row at all
    retry_due       boolean,       -- a quarantined call of this phase is past its backoff
    floor_stored    boolean,       -- a claim floor row exists (trusted or not)
    floor_key       timestamptz,   -- the trusted floor's position, NULL when not trusted
    floor_id        uuid,
    floor_swept     boolean,       -- swept since a full lane set it
    floor_passed    bigint,        -- calls the backlog lanes closed from it
    over_quarantine boolean,       -- 16+ quarantined calls: the backlog start moved over them
    floor_reset_at  timestamptz,   -- when the floor started (the as_of for a new one)
    floor_talking_since timestamptz, -- the trusted stale-answered floor's talking_since
    vacuums         bigint         -- the pair's calls relation's VACUUM count now
);

COMMENT ON TYPE messenger.call_reaper_lanes IS
    'Private: where one reaper phase''s retry, fresh and backlog lanes lie and what its claim floor holds (messenger._reap_lanes).';

COMMIT;
