-- Shape: the fixed interface the reaper relies on and adds (privileges: privileges.sql).
BEGIN;
SELECT plan(7);

-- The service's own tables (schema, columns, keys): tests/stand-in/service_tables.sql.
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
