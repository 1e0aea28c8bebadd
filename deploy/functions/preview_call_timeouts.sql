-- Deploy call_timeout_reaper:functions/preview_call_timeouts to pg

BEGIN;

-- messenger.preview_call_timeouts(batch_size, ring_timeout, stale_timeout, as_of)
--
-- Dry run of one reaper cycle: the calls messenger.reap_call_timeouts would close with the same
-- arguments, and why. Same arguments, defaults (messenger.call_reaper_settings) and validation
-- (SQLSTATE 22023) as the reaper, and the same lanes: messenger._reap_lanes, which the cycle
-- claims from too (claim floor included), per phase of messenger.call_reaper_phases():
-- quarantined calls whose backoff expired (at most ceil(batch_size / 10), never more than 8),
-- then healthy due calls that started within the last polling interval before the cutoff, then
-- older healthy ones from the claim floor, and at a drain's end the calls below the floor it
-- sweeps, batch_size in all. Due is messenger.call_is_due; rows come per phase in the claim's
-- order, started_at then call_id (for Answered calls too: not by updated_at, docs/design.md).
-- due_at is when the call's window ended: started_at + ring_timeout for a Ringing call,
-- updated_at + stale_timeout for an Answered one (messenger.call_due_key + the window).
-- On a Citus coordinator whose call_sessions is distributed, each worker previews its own shard
-- pairs (messenger._preview_local_pairs: per pair and phase the retry lane, the fresh lane, then
-- the backlog, batch_size in all, other quarantined calls left out), rows per phase by due_at; a
-- worker that cannot be read fails the preview with 08000.
-- Changes nothing and locks nothing (STABLE, no FOR UPDATE, no advisory lock), so it may differ
-- from the next real cycle by the calls a concurrent transaction holds (the cycle skips those)
-- and by what changes in between.
-- SECURITY INVOKER: a DBA tool that shows call ids, so it needs the caller's own right to read
-- messenger.call_sessions (and EXECUTE on messenger._reap_lanes, for a role that is not a
-- superuser); EXECUTE is revoked from PUBLIC.
-- Each phase's window is the setting its timeout_setting names (call_reaper_phases()), read
-- from the settings row with the arguments laid over it: the arguments bear the settings' names.
CREATE OR REPLACE FUNCTION messenger.preview_call_timeouts(
    batch_size    integer     DEFAULT NULL,
    ring_timeout  interval    DEFAULT NULL,
    stale_timeout interval    DEFAULT NULL,
    as_of         timestamptz DEFAULT NULL)
RETURNS TABLE (phase text, call_id uuid, status text, new_status text, end_reason text,
               due_at timestamptz, overdue interval, reason text)
LANGUAGE plpgsql
STABLE
SET enable_sort = off
SET jit = off
AS $$
DECLARE
    c_uuid_max constant uuid := 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid;
    v_settings messenger.call_reaper_settings;   -- the arguments laid over the configured values
    v_batch    integer;
    v_as_of    timestamptz;
    v_rule     record;
    v_timeout  interval;
    v_lanes    record;
    v_status   messenger.call_sessions.status%TYPE;   -- text, varchar or the service's enum
    v_nodes    jsonb;
    v_failed   text;
BEGIN
    SELECT * INTO STRICT v_settings FROM messenger.call_reaper_settings;
    v_batch := coalesce(preview_call_timeouts.batch_size, v_settings.batch_size);
    v_settings.ring_timeout := coalesce(preview_call_timeouts.ring_timeout, v_settings.ring_timeout);
    v_settings.stale_timeout := coalesce(preview_call_timeouts.stale_timeout, v_settings.stale_timeout);
    v_as_of := coalesce(preview_call_timeouts.as_of, clock_timestamp());
    PERFORM messenger._check_reaper_options(v_batch, v_settings.ring_timeout, v_settings.stale_timeout, v_as_of);

    -- A Citus coordinator whose call_sessions is distributed: each worker previews its own shard
    -- pairs (messenger._preview_local_pairs), as the fan-out would claim them, one connection
    -- per worker as the caller, who must be able to log in there.
    IF messenger._call_reaper_distributed() THEN
        v_settings.batch_size := v_batch;
        -- plpgsql_check parses a constant EXECUTE against this server, which may have no Citus.
        PERFORM 'PRAGMA:disable:check';
        EXECUTE 'SELECT pg_catalog.jsonb_agg(w) FROM pg_catalog.run_command_on_workers($1, true) AS w'
           INTO v_nodes
          USING format('SELECT messenger._preview_local_pairs(%L::timestamptz, %L::jsonb)', v_as_of, to_jsonb(v_settings));
        PERFORM 'PRAGMA:enable:check';
        SELECT string_agg(format('%s:%s: %s', w.nodename, w.nodeport, w.result), '; ')
          INTO v_failed
          FROM jsonb_to_recordset(v_nodes) AS w (nodename text, nodeport integer, success boolean, result text)
         WHERE NOT w.success;
        IF v_failed IS NOT NULL THEN
            RAISE EXCEPTION 'the preview could not read every Citus worker: %', v_failed
                USING ERRCODE = '08000';
        END IF;
        RETURN QUERY
            SELECT r.phase, r.call_id, r.status, r.new_status, r.end_reason, r.due_at, v_as_of - r.due_at, r.reason
              FROM jsonb_to_recordset(v_nodes) AS w (success boolean, result text),
                   jsonb_to_recordset(w.result::jsonb) AS r (phase text, call_id uuid, status text, new_status text,
                                                             end_reason text, due_at timestamptz, reason text)
             ORDER BY r.phase, r.due_at, r.call_id;
        RETURN;
    END IF;

    FOR v_rule IN SELECT * FROM messenger.call_reaper_phases() LOOP
        v_timeout := (to_jsonb(v_settings) ->> v_rule.timeout_setting)::interval;
        -- A phase run as a cycle would set it up, with no run id, budget or previous run: only
        -- the lanes are read (row type by name: the type's change comes later in the plan).
        v_lanes := messenger._reap_lanes(ROW(v_rule.phase, NULL, v_as_of, v_timeout, v_batch,
                                             v_settings.polling_interval, v_settings.poison_backoff,
                                             v_settings.poison_backoff_max, NULL, NULL, 'messenger.call_sessions',
                                             'messenger.realtime_outbox')::messenger.call_reaper_phase_run);
        v_status := v_lanes.status;
        RETURN QUERY
        WITH expired AS (
            SELECT q.call_id, q.next_attempt_at
              FROM messenger.call_reaper_quarantine AS q
             WHERE v_lanes.retry_due AND q.phase = v_rule.phase AND q.next_attempt_at <= v_as_of
             ORDER BY q.next_attempt_at, q.call_id
             LIMIT least(8, (v_batch + 9) / 10)
        ), retry AS (
            SELECT s.call_id, s.status, s.started_at, messenger.call_due_key(s.status, s.started_at, s.updated_at) AS due_key,
                   format('quarantined (backoff expired at %s): retried', e.next_attempt_at) AS why
              FROM expired AS e
              JOIN messenger.call_sessions AS s ON s.call_id = e.call_id
             WHERE s.status = v_status AND messenger.call_is_due(s.status, s.started_at, s.updated_at, v_lanes.cutoff)
        ), fresh AS (
            SELECT s.call_id, s.status, s.started_at, messenger.call_due_key(s.status, s.started_at, s.updated_at) AS due_key,
                   'started within the last polling interval before the cutoff'::text AS why
              FROM messenger.call_sessions AS s
             WHERE s.status = v_status AND messenger.call_is_due(s.status, s.started_at, s.updated_at, v_lanes.cutoff)
               AND (s.started_at, s.call_id) >= (v_lanes.fresh_from, c_uuid_max) AND s.started_at <= v_lanes.cutoff
               AND NOT EXISTS (SELECT FROM messenger.call_reaper_quarantine AS q WHERE q.call_id = s.call_id)
             ORDER BY s.started_at
             LIMIT greatest(v_batch - (SELECT count(*) FROM retry), 0)
        ), backlog AS (
            SELECT s.call_id, s.status, s.started_at, messenger.call_due_key(s.status, s.started_at, s.updated_at) AS due_key,
                   'backlog, oldest started first'::text AS why
              FROM messenger.call_sessions AS s
             WHERE NOT v_lanes.backlog_empty AND s.status = v_status
               AND messenger.call_is_due(s.status, s.started_at, s.updated_at, v_lanes.cutoff)
               AND s.started_at >= v_lanes.backlog_key + CASE WHEN v_lanes.backlog_id = c_uuid_max THEN interval '1 microsecond' ELSE interval '0' END
               AND s.started_at <= v_lanes.fresh_from
               AND NOT EXISTS (SELECT FROM messenger.call_reaper_quarantine AS q WHERE q.call_id = s.call_id)
             ORDER BY s.started_at
             LIMIT greatest(v_batch - (SELECT count(*) FROM retry) - (SELECT count(*) FROM fresh), 0)
        ), sweep AS (
            -- A drain's end: the backlog lane came up short above a floor full lanes moved.
            SELECT s.call_id, s.status, s.started_at, messenger.call_due_key(s.status, s.started_at, s.updated_at) AS due_key,
                   'below the claim floor a drain left (its end sweeps there)'::text AS why
              FROM messenger.call_sessions AS s
             WHERE v_lanes.floor_key IS NOT NULL AND NOT v_lanes.floor_swept AND s.status = v_status
               AND messenger.call_is_due(s.status, s.started_at, s.updated_at, v_lanes.cutoff)
               AND s.started_at <= v_lanes.floor_key - CASE WHEN v_lanes.floor_id = c_uuid_max THEN interval '0' ELSE interval '1 microsecond' END
               AND s.call_id NOT IN (SELECT b.call_id FROM backlog AS b)
               AND NOT EXISTS (SELECT FROM messenger.call_reaper_quarantine AS q WHERE q.call_id = s.call_id)
               AND (SELECT count(*) FROM backlog) < v_batch - (SELECT count(*) FROM retry) - (SELECT count(*) FROM fresh)
             ORDER BY s.started_at
             LIMIT greatest(v_batch - (SELECT count(*) FROM retry) - (SELECT count(*) FROM fresh)
                            - (SELECT count(*) FROM backlog), 0)
        )
        SELECT v_rule.phase, c.call_id, c.status::text, v_rule.new_status, v_rule.end_reason,
               c.due_key + v_timeout, v_as_of - (c.due_key + v_timeout),
               format('%s since %s, longer than %s %s; %s',
                      CASE v_rule.status WHEN 'Ringing' THEN 'Ringing' ELSE 'Answered with no progress' END,
                      c.due_key, v_rule.timeout_setting,
                      v_timeout, c.why)
          FROM (SELECT * FROM retry UNION ALL SELECT * FROM fresh UNION ALL SELECT * FROM backlog
                UNION ALL SELECT * FROM sweep) AS c
         ORDER BY c.started_at, c.call_id;
    END LOOP;
END
$$;

COMMENT ON FUNCTION messenger.preview_call_timeouts(integer, interval, interval, timestamptz) IS
$$Dry run of one reaper cycle: the calls messenger.reap_call_timeouts(...) would close with the same arguments (phase, new status, due time, how overdue, why). Changes and locks nothing. Usage: SELECT * FROM messenger.preview_call_timeouts();$$;

REVOKE ALL ON FUNCTION messenger.preview_call_timeouts(integer, interval, interval, timestamptz) FROM PUBLIC;

COMMIT;
