-- Deploy call_timeout_reaper:functions/preview_call_timeouts to pg

BEGIN;

-- messenger.preview_call_timeouts(batch_size, ring_timeout, stale_timeout, as_of)
--
-- Dry run of one reaper cycle: the calls messenger.reap_call_timeouts would close with the same
-- arguments, and why. Same arguments, defaults (messenger.call_reaper_settings) and validation
-- (SQLSTATE 22023) as the reaper; same selection: per phase the batch_size oldest-due active
-- calls past their window, skipping quarantined calls whose next attempt is still ahead.
-- Changes nothing and locks nothing (STABLE, no FOR UPDATE, no advisory lock), so it may differ
-- from the next real cycle by the calls a concurrent transaction holds (the cycle skips those)
-- and by what changes in between.
-- SECURITY INVOKER: a DBA tool that shows call ids, so it needs the caller's own right to read
-- messenger.call_sessions; EXECUTE is revoked from PUBLIC.
CREATE OR REPLACE FUNCTION messenger.preview_call_timeouts(
    batch_size    integer     DEFAULT NULL,
    ring_timeout  interval    DEFAULT NULL,
    stale_timeout interval    DEFAULT NULL,
    as_of         timestamptz DEFAULT NULL)
RETURNS TABLE (phase text, call_id uuid, status text, new_status text, end_reason text,
               due_at timestamptz, overdue interval, reason text)
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
    v_settings messenger.call_reaper_settings;
    v_batch    integer;
    v_ring     interval;
    v_stale    interval;
    v_as_of    timestamptz;
BEGIN
    SELECT * INTO STRICT v_settings FROM messenger.call_reaper_settings;
    v_batch := coalesce(preview_call_timeouts.batch_size, v_settings.batch_size);
    v_ring  := coalesce(preview_call_timeouts.ring_timeout, v_settings.ring_timeout);
    v_stale := coalesce(preview_call_timeouts.stale_timeout, v_settings.stale_timeout);
    v_as_of := coalesce(preview_call_timeouts.as_of, clock_timestamp());
    PERFORM messenger._check_reaper_options(v_batch, v_ring, v_stale, v_as_of);

    RETURN QUERY
    SELECT 'ring_timeout'::text, r.call_id, r.status, 'Missed'::text, 'Timeout'::text,
           r.started_at + v_ring, v_as_of - (r.started_at + v_ring),
           format('Ringing since %s, longer than ring_timeout %s', r.started_at, v_ring)
      FROM (SELECT s.call_id, s.status, s.started_at
              FROM messenger.call_sessions AS s
             WHERE s.status = 'Ringing'
               AND s.started_at <= v_as_of - v_ring
               AND NOT EXISTS (SELECT FROM messenger.call_reaper_quarantine AS q
                                WHERE q.call_id = s.call_id AND q.next_attempt_at > v_as_of)
             ORDER BY s.started_at, s.call_id
             LIMIT v_batch) AS r
     ORDER BY r.started_at, r.call_id;

    RETURN QUERY
    SELECT 'stale_answered'::text, a.call_id, a.status, 'Failed'::text, 'Error'::text,
           a.updated_at + v_stale, v_as_of - (a.updated_at + v_stale),
           format('Answered with no progress since %s, longer than stale_timeout %s', a.updated_at, v_stale)
      FROM (SELECT s.call_id, s.status, s.updated_at
              FROM messenger.call_sessions AS s
             WHERE s.status = 'Answered'
               AND s.updated_at <= v_as_of - v_stale
               AND NOT EXISTS (SELECT FROM messenger.call_reaper_quarantine AS q
                                WHERE q.call_id = s.call_id AND q.next_attempt_at > v_as_of)
             ORDER BY s.updated_at, s.call_id
             LIMIT v_batch) AS a
     ORDER BY a.updated_at, a.call_id;
END
$$;

COMMENT ON FUNCTION messenger.preview_call_timeouts(integer, interval, interval, timestamptz) IS
$$Dry run of one reaper cycle: the calls messenger.reap_call_timeouts(...) would close with the same arguments (phase, new status, due time, how overdue, why). Changes and locks nothing. Usage: SELECT * FROM messenger.preview_call_timeouts();$$;

REVOKE ALL ON FUNCTION messenger.preview_call_timeouts(integer, interval, interval, timestamptz) FROM PUBLIC;

COMMIT;
