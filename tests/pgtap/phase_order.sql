-- Phase 1 runs before phase 2 in every cycle: its outbox rows come first in dispatch order, and
-- both phases of a cycle share one run id.
BEGIN;
SELECT plan(3);

-- The stale call is far older than the ringing one: if phase 2 ran first its row would lead.
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
VALUES ('00000000-0000-0000-0000-0000000000f1', gen_random_uuid(), gen_random_uuid(), 'Video', 'Answered',
        '2099-12-31 00:00+00', '2099-12-31 00:00:05+00', '2099-12-31 00:00:05+00'),
       ('00000000-0000-0000-0000-0000000000f2', gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing',
        '2100-01-01 05:59+00', NULL, '2100-01-01 05:59+00');

CREATE TEMP TABLE r AS SELECT * FROM messenger.reap_call_timeouts(as_of => '2100-01-01 06:00+00');

SELECT is(ARRAY(SELECT kind FROM messenger.realtime_outbox
                 WHERE reference_id IN ('00000000-0000-0000-0000-0000000000f1', '00000000-0000-0000-0000-0000000000f2')
                 ORDER BY id),
          ARRAY['CallMissed', 'CallEnded', 'CallEnded'],
          'the ring-timeout phase writes its outbox rows before the stale-answered phase');
SELECT is((SELECT count(DISTINCT correlation_id)::integer FROM messenger.realtime_outbox
            WHERE reference_id IN ('00000000-0000-0000-0000-0000000000f1', '00000000-0000-0000-0000-0000000000f2')),
          1, 'both phases of one cycle share one correlation id');
SELECT is((SELECT ARRAY[missed_count, failed_count] FROM r), ARRAY[1, 1], 'one cycle runs both phases');

SELECT * FROM finish();
ROLLBACK;
