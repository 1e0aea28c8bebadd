-- Backlog: active calls already past their window now, per phase, and how late the oldest is.
-- Due is the reaper's one rule, messenger.call_due_key (a range scan of ix_call_due per phase).
-- Quarantined calls (not retried before next_attempt_at) are counted separately.
--   psql -X -d messenger -f sql/backlog.sql
SELECT o.phase,
       count(*)                                                    AS overdue,
       count(*) FILTER (WHERE q.next_attempt_at > clock_timestamp()) AS quarantined,
       clock_timestamp() - min(o.due_at)                           AS oldest_overdue_by
  FROM (SELECT p.phase, c.call_id, messenger.call_due_key(c.status, c.started_at, c.updated_at) + p.timeout AS due_at
          FROM messenger.call_reaper_settings AS s
         CROSS JOIN LATERAL (VALUES ('ring_timeout', 'Ringing', s.ring_timeout),
                                    ('stale_answered', 'Answered', s.stale_timeout)) AS p (phase, status, timeout)
          JOIN messenger.call_sessions AS c
            ON c.status = p.status
           AND messenger.call_due_key(c.status, c.started_at, c.updated_at) <= clock_timestamp() - p.timeout) AS o
  LEFT JOIN messenger.call_reaper_quarantine AS q ON q.call_id = o.call_id
 GROUP BY o.phase
 ORDER BY o.phase;
