-- The stale-answered claim never scans call_sessions sequentially: its plan is a range scan of
-- the product's ix_call_active (or the reaper's ix_call_due where the product has none) on
-- started_at bounded by the cutoff (every due Answered call started before it),
-- testing updated_at (phase 2's due rule, not indexed so that a progress update stays HOT) on the
-- way. It reads the overdue calls and the Answered calls still talking that started before the
-- cutoff, and no other: not the archived ones, not the live Ringing ones, not the Answered ones
-- that started inside the window. In the generic plan PL/pgSQL may cache as well as in a custom
-- one, on a table where live and archived calls far outnumber the overdue ones. The statement
-- explained is checked to be, word for word, the claim _reap_claim runs.
BEGIN;
SELECT plan(24);

\ir fixtures/live_and_archived_calls.sql
-- And 30 Answered calls whose last progress is more than 2 h before as_of 2100-01-01 12:00,
-- started before that (started_at <= updated_at, as the service writes them).
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Video', 'Answered',
       t - interval '30 minutes', t - interval '29 minutes', t
  FROM generate_series(1, 30) AS g, LATERAL (SELECT timestamptz '2100-01-01 09:50+00' - g * interval '1 second') AS x (t);
ANALYZE messenger.call_sessions;
-- The fixture's live Answered calls that started before the cutoff: still talking, stepped over.
SELECT count(*) AS talking FROM messenger.call_sessions
 WHERE status = 'Answered' AND started_at <= '2100-01-01 10:00+00' AND updated_at > '2100-01-01 10:00+00' \gset

\set claim stale-answered
\set status Answered
\set cutoff '2100-01-01 10:00+00'
\set cutoff_shown '2100-01-01 10:00:00+00'
\set index ix_call_active
\ir fixtures/claim_plan.sql

-- Where the product has no index of active calls, the reaper's ix_call_due (the definition
-- deploy/indexes/ix_call_due.sql builds) in its place.
DROP INDEX messenger.ix_call_active;
CREATE INDEX ix_call_due ON messenger.call_sessions (status, started_at, call_id) WHERE status IN ('Ringing', 'Answered');
\set index ix_call_due
\ir fixtures/claim_plan.sql

SELECT * FROM finish();
ROLLBACK;
