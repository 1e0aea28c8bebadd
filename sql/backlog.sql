-- Backlog: active calls already past their window now, per phase, and how late the oldest is.
-- Quarantined calls (not retried before next_attempt_at) are counted separately.
--   psql -X -d messenger -f sql/backlog.sql
SELECT o.phase,
       count(*)                                                    AS overdue,
       count(*) FILTER (WHERE q.next_attempt_at > clock_timestamp()) AS quarantined,
       clock_timestamp() - min(o.due_at)                           AS oldest_overdue_by
  FROM (SELECT 'ring_timeout' AS phase, c.call_id, c.started_at + s.ring_timeout AS due_at
          FROM messenger.call_sessions AS c, messenger.call_reaper_settings AS s
         WHERE c.status = 'Ringing' AND c.started_at <= clock_timestamp() - s.ring_timeout
        UNION ALL
        SELECT 'stale_answered', c.call_id, c.updated_at + s.stale_timeout
          FROM messenger.call_sessions AS c, messenger.call_reaper_settings AS s
         WHERE c.status = 'Answered' AND c.updated_at <= clock_timestamp() - s.stale_timeout) AS o
  LEFT JOIN messenger.call_reaper_quarantine AS q ON q.call_id = o.call_id
 GROUP BY o.phase
 ORDER BY o.phase;
