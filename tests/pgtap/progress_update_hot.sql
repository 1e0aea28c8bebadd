-- The reaper costs the product's own progress updates nothing: with the reaper installed, an
-- UPDATE of an Answered call that touches only updated_at (the service's signalling progress)
-- is a HOT update, writing no index entry, as it is without the reaper. The claims read the
-- product's own index of active calls (ix_call_active here), or where there is none the reaper's
-- ix_call_due, (status, started_at, call_id) of the active calls: either names updated_at nowhere (a column in an
-- index's key, expression or predicate makes every update of it non-HOT). Counted by this
-- transaction's own statistics (pg_stat_get_xact_tuples_hot_updated), so no other session's
-- writes can move the figures.
BEGIN;
SELECT plan(4);

SELECT ok(NOT EXISTS (SELECT FROM messenger._call_reaper_claim_indexes('messenger.call_sessions') AS x
                       WHERE pg_get_indexdef(x) LIKE '%updated_at%'),
          'the index the claims read names updated_at nowhere (key, expression or predicate)');

-- Room on the pages these calls land on (an update is HOT only when its new version fits on its
-- page): fillfactor 50 leaves half of each page they fill free, so only an index can make an
-- update non-HOT here.
ALTER TABLE messenger.call_sessions SET (fillfactor = 50);
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Video', 'Answered', t, t + interval '5 seconds',
       t + interval '1 minute'
  FROM generate_series(1, 20) AS g, LATERAL (SELECT timestamptz '2200-01-01 00:00+00' + g * interval '1 second') AS x (t);

SELECT pg_stat_get_xact_tuples_updated('messenger.call_sessions'::regclass) AS updated_before,
       pg_stat_get_xact_tuples_hot_updated('messenger.call_sessions'::regclass) AS hot_before \gset
-- Progress on each call, twice: what the service writes while a call goes on.
UPDATE messenger.call_sessions SET updated_at = updated_at + interval '10 seconds'
 WHERE started_at >= '2200-01-01' AND status = 'Answered';
UPDATE messenger.call_sessions SET updated_at = updated_at + interval '10 seconds'
 WHERE started_at >= '2200-01-01' AND status = 'Answered';

SELECT is(pg_stat_get_xact_tuples_updated('messenger.call_sessions'::regclass) - :updated_before, 40::bigint,
          'the service made 40 progress updates of Answered calls');
SELECT is(pg_stat_get_xact_tuples_hot_updated('messenger.call_sessions'::regclass) - :hot_before, 40::bigint,
          'every one of them was a HOT update: no index entry written, the reaper''s included');

-- The reaper still finds them once their window is over: the claim key never moved, the due
-- rule reads updated_at (2 h after the last progress, 00:01:20 + 20 s at most).
SELECT is((SELECT failed_count FROM messenger.reap_call_timeouts(stale_timeout => '2 hours', as_of => '2200-01-01 02:02+00')),
          20, 'and a cycle past their stale window fails all 20');

SELECT * FROM finish();
ROLLBACK;
