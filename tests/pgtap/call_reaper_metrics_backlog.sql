-- The active backlog is what the next cycle would find due now, with the configured timeouts
-- and the reaper's own '<=' cutoffs. REPEATABLE READ: the counts are compared against a baseline
-- of other sessions' calls, which must not move between statements (the scheduled job commits
-- closures every 15 s). Calls inserted here are invisible to that job.
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT plan(6);

CREATE TEMP TABLE mine ON COMMIT DROP AS
SELECT gen_random_uuid() AS call_id, gen_random_uuid() AS caller_user_id,
       gen_random_uuid() AS callee_user_id, 'Audio'::text AS media_type, v.status,
       CASE WHEN v.status IN ('Missed', 'Failed') THEN 'Timeout' END AS end_reason,
       v.started_at, CASE WHEN v.status = 'Answered' THEN v.started_at END AS answered_at,
       CASE WHEN v.status = 'Missed' THEN now() END AS ended_at, v.updated_at
  FROM (VALUES
        -- exactly at the ring cutoff: due
        ('Ringing',  now() - interval '45 seconds', now() - interval '45 seconds'),
        -- a millisecond inside the answer window: not due
        ('Ringing',  now() - interval '44.999 seconds', now() - interval '44.999 seconds'),
        -- ten minutes past: due
        ('Ringing',  now() - interval '10 minutes', now() - interval '10 minutes'),
        -- no progress for exactly the stale window: due
        ('Answered', now() - interval '3 hours', now() - interval '2 hours'),
        -- started long ago but progressed within the window: updated_at is the liveness signal
        ('Answered', now() - interval '3 hours', now() - interval '1 hour 59 minutes'),
        -- terminal calls are never backlog, however old
        ('Missed',   now() - interval '1 day', now() - interval '1 day')
       ) AS v (status, started_at, updated_at);

CREATE TEMP TABLE baseline ON COMMIT DROP AS SELECT * FROM messenger.call_reaper_metrics();
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, end_reason, started_at,
        answered_at, ended_at, updated_at)
SELECT call_id, caller_user_id, callee_user_id, media_type, status, end_reason, started_at,
       answered_at, ended_at, updated_at
  FROM mine;

SELECT is((SELECT m.backlog_ring_timeout - b.backlog_ring_timeout
             FROM messenger.call_reaper_metrics() AS m, baseline AS b), 2::bigint,
    'Ringing calls at or past started_at + ring_timeout are ring backlog, one inside the window is not');
SELECT is((SELECT m.backlog_stale_answered - b.backlog_stale_answered
             FROM messenger.call_reaper_metrics() AS m, baseline AS b), 1::bigint,
    'an Answered call idle for stale_timeout is stale backlog, one that progressed since is not');

-- A quarantined (poison) call is still overdue and still active: it stays in the backlog and
-- shows in the quarantine count.
INSERT INTO messenger.call_reaper_quarantine
       (call_id, phase, attempts, first_failed_at, last_failed_at, next_attempt_at,
        last_sqlstate, last_message, last_run_id)
SELECT call_id, 'ring_timeout', 1, now(), now(), now() + interval '1 minute', 'P0001', 'test', gen_random_uuid()
  FROM mine WHERE status = 'Ringing' AND started_at = now() - interval '10 minutes';
SELECT is((SELECT (m.quarantined - b.quarantined, m.backlog_ring_timeout - b.backlog_ring_timeout)::text
             FROM messenger.call_reaper_metrics() AS m, baseline AS b), '(1,2)',
    'a quarantined call counts in the quarantine and stays in the backlog');

-- Configured timeouts, not the defaults: rebuild the baseline under new settings (without our
-- calls), then add the calls back.
DELETE FROM messenger.call_reaper_quarantine WHERE call_id IN (SELECT call_id FROM mine);
DELETE FROM messenger.call_sessions WHERE call_id IN (SELECT call_id FROM mine);
UPDATE messenger.call_reaper_settings
   SET ring_timeout = interval '5 minutes', stale_timeout = interval '3 hours',
       polling_interval = interval '20 seconds';
TRUNCATE baseline;
INSERT INTO baseline SELECT * FROM messenger.call_reaper_metrics();
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, end_reason, started_at,
        answered_at, ended_at, updated_at)
SELECT call_id, caller_user_id, callee_user_id, media_type, status, end_reason, started_at,
       answered_at, ended_at, updated_at
  FROM mine;

SELECT is((SELECT m.backlog_ring_timeout - b.backlog_ring_timeout
             FROM messenger.call_reaper_metrics() AS m, baseline AS b), 1::bigint,
    'with ring_timeout 5 min only the call ringing for 10 min is ring backlog');
SELECT is((SELECT m.backlog_stale_answered - b.backlog_stale_answered
             FROM messenger.call_reaper_metrics() AS m, baseline AS b), 0::bigint,
    'with stale_timeout 3 h an Answered call idle for 2 h is not stale backlog');
SELECT is((SELECT polling_interval FROM messenger.call_reaper_metrics()), interval '20 seconds',
    'the configured polling interval is reported for alert math');

SELECT * FROM finish();
ROLLBACK;
