-- The ring-timeout claim never scans call_sessions sequentially and never walks a call that is
-- not overdue: its plan is an index range scan of the product's ix_call_active (or the reaper's ix_call_due
-- where the product has none) on started_at bounded by the
-- cutoff, in the generic plan PL/pgSQL may cache as well as in a custom one, and on a
-- table where live and archived calls far outnumber the overdue ones. The statement explained
-- is checked to be, word for word, the claim _reap_claim runs.
BEGIN;
SELECT plan(24);

\ir fixtures/live_and_archived_calls.sql
-- And 30 Ringing calls that are overdue at as_of 2100-01-01 12:00.
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, updated_at)
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing', t, t
  FROM generate_series(1, 30) AS g, LATERAL (SELECT timestamptz '2100-01-01 11:50+00' - g * interval '1 second') AS x (t);
ANALYZE messenger.call_sessions;

\set claim ring-timeout
\set status Ringing
\set cutoff '2100-01-01 11:59:15+00'
\set cutoff_shown '2100-01-01 11:59:15+00'
\set talking 0
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
