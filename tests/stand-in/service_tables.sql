-- The messenger service's tables as the stand-in makes them (stand-in/messenger_service.sql):
-- the shape of docs/design.md, "The messenger service's tables", and the outbox's own CHECKs.
-- The stand-in's, not the reaper's: run before the deploy by scripts/test-in-cluster.
BEGIN;
SELECT plan(9);

SELECT has_schema('messenger', 'schema messenger exists');
SELECT has_table('messenger', 'call_sessions', 'messenger.call_sessions exists');
SELECT columns_are('messenger', 'call_sessions',
    ARRAY['call_id', 'caller_user_id', 'callee_user_id', 'media_type', 'status', 'end_reason',
          'started_at', 'answered_at', 'ended_at', 'updated_at', 'duration_seconds'],
    'call_sessions has exactly the columns of docs/design.md, "The messenger service''s tables"');
SELECT col_is_pk('messenger', 'call_sessions', 'call_id', 'call_id is the primary key of call_sessions');
SELECT has_table('messenger', 'realtime_outbox', 'messenger.realtime_outbox exists');
SELECT columns_are('messenger', 'realtime_outbox',
    ARRAY['id', 'kind', 'target_kind', 'target_id', 'reference_id', 'payload', 'correlation_id',
          'created_at', 'dispatched_at'],
    'realtime_outbox has exactly the columns of docs/design.md, "The messenger service''s tables"');
SELECT col_is_pk('messenger', 'realtime_outbox', 'id', 'id is the primary key of realtime_outbox');

PREPARE push(text, text, jsonb) AS
INSERT INTO messenger.realtime_outbox (kind, target_kind, target_id, reference_id, payload)
VALUES ($1, 'User', $2, '00000000-0000-0000-0000-0000000000e1', $3);

SELECT throws_ok($$EXECUTE push('CallEnded', 'user:00000000-0000-0000-0000-00000000e0c1',
    '{"callId": "00000000-0000-0000-0000-0000000000e1", "status": "Failed", "mediaType": "Audio", "callerName": "Alice"}')$$,
    '23514', NULL, 'a call event payload with a key beyond callId/status/mediaType is refused');
SELECT throws_ok($$EXECUTE push('CallEnded', 'alice@example.com',
    '{"callId": "00000000-0000-0000-0000-0000000000e1", "status": "Failed", "mediaType": "Audio"}')$$,
    '23514', NULL, 'a user target that is not user:<uuid> is refused');

SELECT * FROM finish();
ROLLBACK;
