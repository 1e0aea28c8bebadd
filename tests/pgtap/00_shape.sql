-- Shape and privileges: the fixed interface of SPEC §4 and least privilege.
BEGIN;
SELECT plan(27);

SELECT has_schema('messenger', 'schema messenger exists');
SELECT has_table('messenger', 'call_sessions', 'messenger.call_sessions exists');
SELECT columns_are('messenger', 'call_sessions',
    ARRAY['call_id', 'caller_user_id', 'callee_user_id', 'media_type', 'status', 'end_reason',
          'started_at', 'answered_at', 'ended_at', 'updated_at', 'duration_seconds'],
    'call_sessions has exactly the SPEC columns');
SELECT col_is_pk('messenger', 'call_sessions', 'call_id', 'call_id is the primary key of call_sessions');
SELECT has_table('messenger', 'realtime_outbox', 'messenger.realtime_outbox exists');
SELECT columns_are('messenger', 'realtime_outbox',
    ARRAY['id', 'kind', 'target_kind', 'target_id', 'reference_id', 'payload', 'correlation_id',
          'created_at', 'dispatched_at'],
    'realtime_outbox has exactly the SPEC columns');
SELECT col_is_pk('messenger', 'realtime_outbox', 'id', 'id is the primary key of realtime_outbox');
SELECT has_index('messenger', 'call_sessions', 'ix_call_active', 'the partial index of active calls exists');
SELECT is((SELECT pg_get_expr(indpred, indrelid) FROM pg_index
            WHERE indexrelid = 'messenger.ix_call_active'::regclass),
          $$(status = ANY (ARRAY['Ringing'::text, 'Answered'::text]))$$,
          'ix_call_active covers exactly the active statuses');
SELECT index_is_unique('messenger', 'realtime_outbox', 'ux_realtime_outbox_call_event',
    'one outbox row per call event and recipient is enforced by a unique index');

SELECT has_function('messenger', 'reap_call_timeouts',
    ARRAY['integer', 'interval', 'interval', 'timestamp with time zone'],
    'reap_call_timeouts(batch_size, ring_timeout, stale_timeout, as_of) exists');
SELECT function_returns('messenger', 'reap_call_timeouts',
    ARRAY['integer', 'interval', 'interval', 'timestamp with time zone'], 'messenger.call_reaper_cycle',
    'reap_call_timeouts returns one call_reaper_cycle row');
SELECT is_definer('messenger', 'reap_call_timeouts',
    ARRAY['integer', 'interval', 'interval', 'timestamp with time zone'],
    'reap_call_timeouts is SECURITY DEFINER');
SELECT is((SELECT proconfig FROM pg_proc
            WHERE oid = 'messenger.reap_call_timeouts(integer, interval, interval, timestamptz)'::regprocedure),
          ARRAY['search_path=pg_catalog, pg_temp'],
          'reap_call_timeouts pins search_path to pg_catalog, pg_temp');
SELECT function_owner_is('messenger', 'reap_call_timeouts',
    ARRAY['integer', 'interval', 'interval', 'timestamp with time zone'], 'messenger_call_reaper_owner',
    'reap_call_timeouts is owned by the dedicated owner role');
SELECT function_privs_are('messenger', 'reap_call_timeouts',
    ARRAY['integer', 'interval', 'interval', 'timestamp with time zone'], 'messenger_call_reaper',
    ARRAY['EXECUTE'], 'the job role may execute the reaper');
SELECT function_privs_are('messenger', 'reap_call_timeouts',
    ARRAY['integer', 'interval', 'interval', 'timestamp with time zone'], 'public',
    ARRAY[]::text[], 'PUBLIC may not execute the reaper');
SELECT is(ARRAY(SELECT p.proname::text FROM pg_proc p
                 WHERE p.pronamespace = 'messenger'::regnamespace
                   AND has_function_privilege('public', p.oid, 'EXECUTE')
                 ORDER BY 1),
          ARRAY['call_due_key']::text[],
          'no function in schema messenger is executable by PUBLIC but call_due_key, which every writer of call_sessions evaluates through ix_call_due');

SELECT has_role('messenger_call_reaper', 'the job role exists');
SELECT has_role('messenger_call_reaper_monitor', 'the monitor role exists');
SELECT isnt_superuser('messenger_call_reaper', 'the job role is not a superuser');
SELECT isnt_superuser('messenger_call_reaper_owner', 'the owner role is not a superuser');
SELECT ok((SELECT rolcanlogin FROM pg_roles WHERE rolname = 'messenger_call_reaper'),
          'the job role can log in, as pg_cron background workers need on PostgreSQL 15');
SELECT ok((SELECT rolconfig @> ARRAY['statement_timeout=30s', 'idle_in_transaction_session_timeout=1min']
             FROM pg_roles WHERE rolname = 'messenger_call_reaper'),
          'the job role bounds a cycle (30 s) and an idle lock holder (1 min)');
SELECT table_privs_are('messenger', 'call_sessions', 'messenger_call_reaper', ARRAY[]::text[],
    'the job role cannot touch calls directly');
SELECT table_privs_are('messenger', 'realtime_outbox', 'messenger_call_reaper', ARRAY[]::text[],
    'the job role cannot touch the outbox directly');
SELECT table_privs_are('messenger', 'call_sessions', 'messenger_call_reaper_monitor', ARRAY[]::text[],
    'the monitor role cannot read calls');

SELECT * FROM finish();
ROLLBACK;
