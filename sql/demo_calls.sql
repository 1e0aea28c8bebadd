-- Sample calls for `make demo`: watch `make run` reap them. Relative to now, so it works at any
-- time; random ids, no personal data.
--   3 Ringing for 50 s      -> Missed at the next tick (ring_timeout 45 s)
--   2 Ringing for 30 s      -> Missed about 15 s later
--   2 Answered, silent 2 h  -> Failed at the next tick (stale_timeout 2 h)
--   1 Answered, just talked -> left alone
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), d.media, d.status,
       now() - d.age, CASE WHEN d.status = 'Answered' THEN now() - d.age + interval '5 seconds' END,
       now() - d.idle
  FROM (VALUES ('Ringing', 'Audio', interval '50 seconds', interval '50 seconds', 3),
               ('Ringing', 'Video', interval '30 seconds', interval '30 seconds', 2),
               ('Answered', 'Audio', interval '2 hours 5 minutes', interval '2 hours 1 minute', 2),
               ('Answered', 'Video', interval '10 minutes', interval '5 seconds', 1))
       AS d (status, media, age, idle, n),
       generate_series(1, d.n)
RETURNING call_id, status, media_type, started_at::time(0) AS started, updated_at::time(0) AS last_progress;
