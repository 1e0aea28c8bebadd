-- Backlog: active calls already past their window now, per phase, and how late the oldest is.
-- The phases, their statuses and the setting holding each window are messenger.call_reaper_phases();
-- due is the reaper's one rule, messenger.call_is_due (a range scan of the claims' index per phase); a
-- call's due_at is when its window ended (messenger.call_due_key: started_at or, Answered, updated_at).
-- Quarantined calls (not retried before next_attempt_at) are counted separately.
--   psql -X -d messenger -f sql/backlog.sql
-- The status column's type (text, varchar or the service's enum), so a phase's status compares
-- with the column as it is and the index serves the comparison.
SELECT format_type(a.atttypid, a.atttypmod) AS status_type
  FROM pg_catalog.pg_attribute AS a
 WHERE a.attrelid = 'messenger.call_sessions'::regclass AND a.attname = 'status' \gset
SELECT o.phase,
       count(*)                                                    AS overdue,
       count(*) FILTER (WHERE q.next_attempt_at > clock_timestamp()) AS quarantined,
       clock_timestamp() - min(o.due_at)                           AS oldest_overdue_by
  FROM (SELECT p.phase, c.call_id, messenger.call_due_key(c.status, c.started_at, c.updated_at) + p.timeout AS due_at
          FROM (SELECT r.phase, CAST(r.status AS :status_type) AS status,
                       (to_jsonb(s) ->> r.timeout_setting)::interval AS timeout
                  FROM messenger.call_reaper_phases() AS r
                 CROSS JOIN messenger.call_reaper_settings AS s) AS p
          JOIN messenger.call_sessions AS c
            ON c.status = p.status
           AND messenger.call_is_due(c.status, c.started_at, c.updated_at, clock_timestamp() - p.timeout)) AS o
  LEFT JOIN messenger.call_reaper_quarantine AS q ON q.call_id = o.call_id
 GROUP BY o.phase
 ORDER BY o.phase;
