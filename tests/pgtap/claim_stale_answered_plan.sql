-- The stale-answered claim never scans call_sessions sequentially and never walks a call that
-- is not overdue: its plan is a range scan of ix_call_due bounded by the cutoff on the due key,
-- updated_at for Answered calls (ix_call_active, keyed on started_at, would walk every Answered
-- call), in the generic plan PL/pgSQL may cache as well as in a custom one, and on a table
-- where live and archived calls far outnumber the overdue ones. The statement explained is
-- checked to be, word for word, the claim _reap_phase runs.
BEGIN;
SELECT plan(12);

\ir fixtures/live_and_archived_calls.sql
-- And 30 Answered calls whose last progress is more than 2 h before as_of 2100-01-01 12:00.
-- started_at runs against updated_at so that an index on started_at cannot bound the scan by
-- accident.
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Video', 'Answered',
       timestamptz '2100-01-01 11:00+00' + g * interval '1 second', timestamptz '2100-01-01 11:00+00' + g * interval '1 second', t
  FROM generate_series(1, 30) AS g, LATERAL (SELECT timestamptz '2100-01-01 09:50+00' - g * interval '1 second') AS x (t);
ANALYZE messenger.call_sessions;

\set claim stale-answered
\set status Answered
\set cutoff '2100-01-01 10:00+00'
\set cutoff_shown '2100-01-01 10:00:00+00'
\ir fixtures/claim_plan.sql

SELECT * FROM finish();
ROLLBACK;
