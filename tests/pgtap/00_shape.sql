-- Shape: the fixed interface the reaper relies on and adds (privileges: privileges.sql).
BEGIN;
SELECT plan(14);

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
SELECT isnt(pg_catalog.pg_get_userbyid((SELECT relowner FROM pg_class WHERE oid = 'messenger.call_sessions'::regclass))::text,
            session_user::text, 'the reaper does not own call_sessions: the messenger service does');
SELECT is((SELECT i.indisvalid FROM pg_index AS i WHERE i.indexrelid = 'messenger.ix_call_due'::regclass), true,
          'the due index the reaper added is valid (built online)');
SELECT index_is_unique('messenger', 'realtime_outbox', 'ux_realtime_outbox_call_event',
    'one outbox row per call event and recipient is enforced by a unique index');

SELECT has_function('messenger', 'reap_call_timeouts',
    ARRAY['integer', 'interval', 'interval', 'timestamp with time zone'],
    'reap_call_timeouts(batch_size, ring_timeout, stale_timeout, as_of) exists');
SELECT function_returns('messenger', 'reap_call_timeouts',
    ARRAY['integer', 'interval', 'interval', 'timestamp with time zone'], 'messenger.call_reaper_cycle',
    'reap_call_timeouts returns one call_reaper_cycle row');

SELECT has_role('messenger_call_reaper', 'the job role exists');
SELECT has_role('messenger_call_reaper_monitor', 'the monitor role exists');

SELECT * FROM finish();
ROLLBACK;
