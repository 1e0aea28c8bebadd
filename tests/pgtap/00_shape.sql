-- Shape: the fixed interface the reaper relies on and adds (privileges: privileges.sql).
BEGIN;
SELECT plan(8);

-- The service's own tables (schema, columns, keys): tests/stand-in/service_tables.sql.
SELECT isnt(pg_catalog.pg_get_userbyid((SELECT relowner FROM pg_class WHERE oid = 'messenger.call_sessions'::regclass))::text,
            session_user::text, 'the reaper does not own call_sessions: the messenger service does');
-- The stand-in has the service's own index of active calls: the claims read it, and the reaper
-- builds none of its own (ix_call_due is built where the product has none: test_index_ownership.py).
SELECT is(ARRAY(SELECT x::text FROM messenger._call_reaper_claim_indexes('messenger.call_sessions') AS x),
          ARRAY['messenger.ix_call_active'],
          'the claims read the product''s own valid ix_call_active, the one index they can read');
SELECT is((SELECT count(*)::integer FROM pg_index AS i
            WHERE i.indrelid = 'messenger.call_sessions'::regclass
              AND i.indexrelid NOT IN ('messenger.call_sessions_pkey'::regclass, 'messenger.ix_call_active'::regclass)),
          0, 'the reaper added no index to call_sessions (no ix_call_due beside the product''s own)');
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
