-- Privileges, in one place: who owns and who may execute every routine of schema messenger,
-- who holds what on every table and column and the reaper's roles' attributes, on every
-- PostgreSQL version (pg_cron or not); who runs the pg_cron jobs is in privileges_cron.sql,
-- which needs pg_cron. Exhaustive lists: a new object, grant or owner shows up here as
-- an extra row until it is written down. "deployer" is whoever ran sqitch deploy (session_user
-- here). What needs a real login as a role (denials, pg_hba, search_path attacks) is in
-- tests/python/test_security.py.
BEGIN;
SELECT plan(10);

CREATE TEMP VIEW who (oid, name) AS
SELECT r.oid, CASE WHEN r.rolname = session_user THEN 'deployer' ELSE r.rolname::text END
  FROM pg_catalog.pg_roles AS r
UNION ALL SELECT 0, 'PUBLIC';

-- Routines: owner, SECURITY DEFINER, search_path pinned (first SET clause), who may execute.
-- Every SECURITY DEFINER routine pins search_path; call_due_key, call_reaper_lock_key,
-- call_reaper_phases, call_reaper_error_class and call_reaper_job_name are inlined constants-of-their-arguments (no SET clause, or they would not inline); procedures
-- that COMMIT cannot have a SET clause.
SELECT bag_eq(
    $$SELECT p.oid::regprocedure::text, o.name, p.prosecdef,
             coalesce(p.proconfig[1] = 'search_path=pg_catalog, pg_temp', false)
        FROM pg_proc AS p JOIN who AS o ON o.oid = p.proowner
       WHERE p.pronamespace = 'messenger'::regnamespace$$,
    $$VALUES
      ('messenger._call_reaper_quarantine_released()', 'messenger_call_reaper_owner', true, true),
      ('messenger._call_reaper_distributed()', 'messenger_call_reaper_owner', false, true),
      ('messenger._call_reaper_index_claim(text,regclass,name,text,boolean,name)', 'deployer', false, true),
      ('messenger._call_reaper_index_leftovers()', 'deployer', false, true),
      ('messenger._call_reaper_index_shape(regclass)', 'deployer', false, true),
      ('messenger._call_reaper_claim_indexes(regclass)', 'deployer', false, true),
      ('messenger._call_reaper_with_lock_retries(text)', 'deployer', false, true),
      ('messenger._call_reaper_settings_guard()', 'deployer', false, true),
      ('messenger._check_reaper_duration(text,interval,interval,interval)', 'messenger_call_reaper_owner', false, true),
      ('messenger._check_reaper_options(integer,interval,interval,timestamp with time zone)', 'messenger_call_reaper_owner', false, true),
      ('messenger._end_stale_call_reaper_lock()', 'deployer', false, true),
      ('messenger._purge_call_reaper_runs(timestamp with time zone,integer)', 'messenger_call_reaper_owner', true, true),
      ('messenger._preview_local_pairs(timestamp with time zone,jsonb)', 'messenger_call_reaper_owner', true, true),
      ('messenger._reap_claim_lane(messenger.call_reaper_lanes,timestamp with time zone,uuid,timestamp with time zone,uuid,uuid[],integer,regclass)', 'messenger_call_reaper_owner', false, true),
      ('messenger._reap_claim_retries(text,text,timestamp with time zone,timestamp with time zone,integer,regclass)', 'messenger_call_reaper_owner', false, true),
      ('messenger._reap_close(messenger.call_reaper_phase_run,uuid[],timestamp with time zone[],timestamp with time zone[],integer,integer)', 'messenger_call_reaper_owner', false, true),
      ('messenger._reap_cycle(integer,interval,interval,timestamp with time zone,uuid)', 'messenger_call_reaper_owner', true, true),
      ('messenger._reap_ledger(messenger.call_reaper_cycle,timestamp with time zone,messenger.call_reaper_settings,double precision[],integer,integer,text,text)', 'messenger_call_reaper_owner', false, true),
      ('messenger.call_reaper_next_deadline(timestamp with time zone)', 'messenger_call_reaper_owner', true, true),
      ('messenger._reap_deadline(timestamp with time zone)', 'messenger_call_reaper_owner', true, true),
      ('messenger._reap_floor_trusted(messenger.call_reaper_phase_run,record,bigint)', 'messenger_call_reaper_owner', false, true),
      ('messenger._reap_fanout(uuid,timestamp with time zone,jsonb,integer)', 'messenger_call_reaper_owner', true, true),
      ('messenger._reap_first_passed(text,timestamp with time zone,uuid,timestamp with time zone,uuid,uuid[],boolean,regclass)', 'messenger_call_reaper_owner', false, true),
      ('messenger._reap_lanes(messenger.call_reaper_phase_run)', 'messenger_call_reaper_owner', false, true),
      ('messenger._reap_local_pairs(uuid,timestamp with time zone,jsonb,integer,jsonb)', 'messenger_call_reaper_owner', false, false),
      ('messenger._reap_local_pin(regclass,bigint,bigint,text,boolean)', 'messenger_call_reaper_owner', false, true),
      ('messenger._reap_local_gone(uuid,timestamp with time zone,jsonb)', 'messenger_call_reaper_owner', false, true),
      ('messenger._reap_pair(regclass,regclass,uuid,timestamp with time zone,jsonb,integer,uuid)', 'messenger_call_reaper_owner', true, true),
      ('messenger._reap_claim(messenger.call_reaper_phase_run,messenger.call_reaper_lanes)', 'messenger_call_reaper_owner', false, true),
      ('messenger._reap_pair_sql(regproc,text,regclass,regclass,text[])', 'messenger_call_reaper_owner', false, true),
      ('messenger._reap_pair_check(regclass,regclass,uuid,timestamp with time zone,jsonb,integer)', 'messenger_call_reaper_owner', false, true),
      ('messenger._reap_quarantine_call(uuid,text,text,text,uuid,timestamp with time zone,interval,interval)', 'messenger_call_reaper_owner', false, true),
      ('messenger._reap_save_floor(messenger.call_reaper_phase_run,messenger.call_reaper_lanes,messenger.call_reaper_backlog_outcome)', 'messenger_call_reaper_owner', false, true),
      ('messenger.call_reaper_citus_prepare()', 'deployer', false, true),
      ('messenger.call_reaper_error_class(text)', 'deployer', false, false),
      ('messenger.call_reaper_job_name(text)', 'deployer', false, false),
      ('messenger.call_reaper_phases()', 'deployer', false, false),
      ('messenger.call_due_key(anyelement,timestamp with time zone,timestamp with time zone)', 'deployer', false, false),
      ('messenger.call_is_due(anyelement,timestamp with time zone,timestamp with time zone,timestamp with time zone)', 'deployer', false, false),
      ('messenger.call_reaper_lock_key()', 'deployer', false, false),
      ('messenger.call_reaper_jobs()', 'deployer', true, true),
      ('messenger.call_reaper_lock_holder()', 'deployer', true, true),
      ('messenger.call_reaper_metrics()', 'messenger_call_reaper_owner', true, true),
      ('messenger.call_reaper_status()', 'deployer', false, true),
      ('messenger.drain_call_timeouts(integer,integer,interval,interval,timestamp with time zone,real,integer,bigint,bigint)', 'deployer', false, false),
      ('messenger.pause_call_reaper()', 'deployer', false, true),
      ('messenger.preview_call_timeouts(integer,interval,interval,timestamp with time zone)', 'deployer', false, false),
      ('messenger.purge_call_reaper_history(timestamp with time zone,integer)', 'deployer', false, true),
      ('messenger.reap_call_timeouts(integer,interval,interval,timestamp with time zone)', 'messenger_call_reaper_owner', true, true),
      ('messenger.resume_call_reaper()', 'deployer', false, true),
      ('messenger.run_call_reaper_ticks(timestamp with time zone)', 'messenger_call_reaper_owner', false, false),
      ('messenger.run_call_reaper_warden()', 'deployer', false, false)$$,
    'every routine of messenger: its owner, SECURITY DEFINER or not, search_path pinned or not');

SELECT is(ARRAY(SELECT p.oid::regprocedure::text FROM pg_proc AS p
                 WHERE p.pronamespace = 'messenger'::regnamespace AND p.prosecdef
                   AND NOT coalesce(p.proconfig[1] = 'search_path=pg_catalog, pg_temp', false)),
          '{}'::text[], 'every SECURITY DEFINER routine pins search_path to pg_catalog, pg_temp');

-- The deployer's pg_cron jobs run these with the deployer's rights (a superuser on a
-- self-managed server): none may belong to a role the deploy created, which could replace it,
-- and every one pins its search_path except the procedure that must COMMIT.
SELECT is(ARRAY(SELECT p.oid::regprocedure::text FROM pg_proc AS p
                 WHERE p.oid IN ('messenger.purge_call_reaper_history(timestamptz, integer)'::regprocedure,
                                 'messenger.run_call_reaper_warden()'::regprocedure,
                                 'messenger._end_stale_call_reaper_lock()'::regprocedure)
                   AND (p.proowner <> (SELECT oid FROM pg_roles WHERE rolname = session_user)
                        OR (p.prokind = 'f' AND NOT coalesce(p.proconfig[1] = 'search_path=pg_catalog, pg_temp', false)))),
          '{}'::text[], 'what the deployer''s jobs run is the deployer''s own, search_path pinned');

-- EXECUTE beside the owner's own: PUBLIC only on the six inlined pure functions (every writer
-- of call_sessions evaluated call_due_key through the released ix_call_due; the due rule
-- call_is_due, the lock key, the phase rule and the error classes and the job names are constants), the job role on the reaper, the cycle its tick procedure
-- chains and that procedure, the monitor role on the metrics read, the owner role (for the
-- metrics read) on the deployer's view of the single-runner lock's holder.
SELECT bag_eq(
    $$SELECT p.oid::regprocedure::text, g.name
        FROM pg_proc AS p
       CROSS JOIN LATERAL aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) AS a
        JOIN who AS g ON g.oid = a.grantee
       WHERE p.pronamespace = 'messenger'::regnamespace AND a.grantee <> p.proowner$$,
    $$VALUES
      ('messenger.call_due_key(anyelement,timestamp with time zone,timestamp with time zone)', 'PUBLIC'),
      ('messenger.call_is_due(anyelement,timestamp with time zone,timestamp with time zone,timestamp with time zone)', 'PUBLIC'),
      ('messenger.call_reaper_lock_key()', 'PUBLIC'),
      ('messenger.call_reaper_phases()', 'PUBLIC'),
      ('messenger.call_reaper_error_class(text)', 'PUBLIC'),
      ('messenger.call_reaper_job_name(text)', 'PUBLIC'),
      ('messenger._reap_cycle(integer,interval,interval,timestamp with time zone,uuid)', 'messenger_call_reaper'),
      ('messenger.reap_call_timeouts(integer,interval,interval,timestamp with time zone)', 'messenger_call_reaper'),
      ('messenger.run_call_reaper_ticks(timestamp with time zone)', 'messenger_call_reaper'),
      ('messenger.call_reaper_next_deadline(timestamp with time zone)', 'messenger_call_reaper'),
      ('messenger.call_reaper_next_deadline(timestamp with time zone)', 'messenger_call_reaper_operator'),
      ('messenger._reap_deadline(timestamp with time zone)', 'messenger_call_reaper'),
      ('messenger._reap_deadline(timestamp with time zone)', 'messenger_call_reaper_operator'),
      ('messenger.call_reaper_metrics()', 'messenger_call_reaper_monitor'),
      ('messenger._reap_cycle(integer,interval,interval,timestamp with time zone,uuid)', 'messenger_call_reaper_operator'),
      ('messenger.reap_call_timeouts(integer,interval,interval,timestamp with time zone)', 'messenger_call_reaper_operator'),
      ('messenger.run_call_reaper_ticks(timestamp with time zone)', 'messenger_call_reaper_operator'),
      ('messenger.drain_call_timeouts(integer,integer,interval,interval,timestamp with time zone,real,integer,bigint,bigint)', 'messenger_call_reaper_operator'),
      ('messenger.preview_call_timeouts(integer,interval,interval,timestamp with time zone)', 'messenger_call_reaper_operator'),
      ('messenger.pause_call_reaper()', 'messenger_call_reaper_operator'),
      ('messenger.resume_call_reaper()', 'messenger_call_reaper_operator'),
      ('messenger._reap_pair(regclass,regclass,uuid,timestamp with time zone,jsonb,integer,uuid)', 'messenger_call_reaper_operator'),
      ('messenger._reap_fanout(uuid,timestamp with time zone,jsonb,integer)', 'messenger_call_reaper_operator'),
      ('messenger._call_reaper_distributed()', 'messenger_call_reaper_operator'),
      ('messenger._call_reaper_claim_indexes(regclass)', 'messenger_call_reaper_owner'),
      ('messenger._preview_local_pairs(timestamp with time zone,jsonb)', 'messenger_call_reaper_operator'),
      ('messenger._reap_local_pairs(uuid,timestamp with time zone,jsonb,integer,jsonb)', 'messenger_call_reaper_operator'),
      ('messenger._reap_local_pin(regclass,bigint,bigint,text,boolean)', 'messenger_call_reaper_operator'),
      ('messenger._reap_local_gone(uuid,timestamp with time zone,jsonb)', 'messenger_call_reaper_operator'),
      ('messenger._check_reaper_options(integer,interval,interval,timestamp with time zone)', 'messenger_call_reaper_operator'),
      ('messenger._check_reaper_duration(text,interval,interval,interval)', 'messenger_call_reaper_operator'),
      ('messenger.call_reaper_metrics()', 'messenger_call_reaper_operator'),
      ('messenger.call_reaper_lock_holder()', 'messenger_call_reaper_owner'),
      ('messenger.call_reaper_jobs()', 'messenger_call_reaper_owner')$$,
    'who may execute routines of messenger, beside their owners: nobody else');

-- Tables and sequences: every table of the reaper is the deployer's (an owner holds every
-- privilege on what it owns), the messenger service's stay its own; the owner role holds what
-- the reaper writes, nothing more; no other grant to a reaper role or PUBLIC. The messenger
-- service's own roles (messenger_service, messenger_app: the stand-in's) are left out.
CREATE TEMP VIEW product_role (oid) AS
    SELECT r.oid FROM pg_roles AS r WHERE r.rolname IN ('messenger_service', 'messenger_app');
SELECT bag_eq(
    $$SELECT c.relname::text, o.name FROM pg_class AS c JOIN who AS o ON o.oid = c.relowner
       WHERE c.relnamespace = 'messenger'::regnamespace AND c.relkind IN ('r', 'p', 'S', 'v', 'm')
         AND NOT c.relispartition$$,
    $$SELECT c.relname::text, CASE WHEN c.relname LIKE 'call\_reaper\_%' THEN 'deployer'
                                   ELSE 'messenger_service' END
        FROM pg_class AS c
       WHERE c.relnamespace = 'messenger'::regnamespace AND c.relkind IN ('r', 'p', 'S', 'v', 'm')
         AND NOT c.relispartition$$,
    'every table of the reaper is owned by the deployer, the messenger service''s by its own role, none by a reaper role');
SELECT bag_eq(
    $$SELECT c.relname::text, g.name, a.privilege_type::text
        FROM pg_class AS c CROSS JOIN LATERAL aclexplode(c.relacl) AS a JOIN who AS g ON g.oid = a.grantee
       WHERE c.relnamespace = 'messenger'::regnamespace AND a.grantee <> c.relowner
         AND a.grantee NOT IN (SELECT oid FROM product_role) AND NOT c.relispartition$$,
    $$VALUES
      ('call_sessions', 'messenger_call_reaper_owner', 'SELECT'),
      ('realtime_outbox', 'messenger_call_reaper_owner', 'INSERT'),
      -- the sequence behind its id (identity or serial): a pair's outbox without a default takes ids from it
      ((SELECT c.relname::text FROM pg_class AS c WHERE c.oid = pg_get_serial_sequence('messenger.realtime_outbox', 'id')::regclass), 'messenger_call_reaper_owner', 'USAGE'),
      ('call_reaper_settings', 'messenger_call_reaper_owner', 'SELECT'),
      ('call_reaper_runs', 'messenger_call_reaper_owner', 'SELECT'),
      ('call_reaper_runs', 'messenger_call_reaper_owner', 'INSERT'),
      ('call_reaper_runs', 'messenger_call_reaper_owner', 'DELETE'),
      ('call_reaper_counters', 'messenger_call_reaper_owner', 'SELECT'),
      ('call_reaper_counters', 'messenger_call_reaper_owner', 'UPDATE'),
      ('call_reaper_quarantine', 'messenger_call_reaper_owner', 'SELECT'),
      ('call_reaper_quarantine', 'messenger_call_reaper_owner', 'INSERT'),
      ('call_reaper_quarantine', 'messenger_call_reaper_owner', 'UPDATE'),
      ('call_reaper_quarantine', 'messenger_call_reaper_owner', 'DELETE'),
      ('call_reaper_claim_floor', 'messenger_call_reaper_owner', 'SELECT'),
      ('call_reaper_claim_floor', 'messenger_call_reaper_owner', 'INSERT'),
      ('call_reaper_claim_floor', 'messenger_call_reaper_owner', 'UPDATE'),
      ('call_reaper_claim_floor', 'messenger_call_reaper_owner', 'DELETE'),
      ('call_reaper_settings', 'messenger_call_reaper_operator', 'SELECT'),
      ('call_reaper_runs', 'messenger_call_reaper_operator', 'SELECT'),
      ('call_reaper_lock_takeovers', 'messenger_call_reaper_operator', 'SELECT'),
      ('call_reaper_quarantine', 'messenger_call_reaper_operator', 'SELECT'),
      ('call_reaper_quarantine', 'messenger_call_reaper_operator', 'DELETE'),
      ('call_reaper_lock_holders', 'messenger_call_reaper_owner', 'SELECT'),
      -- the unlogged idle counts: the owner's cycle advances them, the operator's status reads one
      ('call_reaper_idle_cycles', 'messenger_call_reaper_owner', 'SELECT'),
      ('call_reaper_idle_cycles', 'messenger_call_reaper_owner', 'UPDATE'),
      ('call_reaper_idle_cycles', 'messenger_call_reaper_operator', 'SELECT'),
      ('call_reaper_idle_cycle_at', 'messenger_call_reaper_owner', 'SELECT'),
      ('call_reaper_idle_cycle_at', 'messenger_call_reaper_owner', 'UPDATE'),
      ('call_reaper_idle_cycle_at', 'messenger_call_reaper_operator', 'SELECT')$$,
    'table grants in messenger: the owner role''s and the operator''s reads, nothing on a product table for the job, monitor or operator role, nothing for PUBLIC');
-- Columns: the owner role updates only a closed call's transition columns; the job role reads
-- the three settings its tick procedure needs (polling interval, pause flag, catch-up batch)
-- and the schedule its job was recorded with (one cycle or the minute loop).
SELECT bag_eq(
    $$SELECT c.relname::text, att.attname::text, g.name, a.privilege_type::text
        FROM pg_attribute AS att JOIN pg_class AS c ON c.oid = att.attrelid
       CROSS JOIN LATERAL aclexplode(att.attacl) AS a JOIN who AS g ON g.oid = a.grantee
       WHERE c.relnamespace = 'messenger'::regnamespace AND NOT c.relispartition
         AND a.grantee NOT IN (SELECT oid FROM product_role)$$,
    $$VALUES
      ('call_sessions', 'status', 'messenger_call_reaper_owner', 'UPDATE'),
      ('call_sessions', 'end_reason', 'messenger_call_reaper_owner', 'UPDATE'),
      ('call_sessions', 'ended_at', 'messenger_call_reaper_owner', 'UPDATE'),
      ('call_sessions', 'updated_at', 'messenger_call_reaper_owner', 'UPDATE'),
      ('call_sessions', 'duration_seconds', 'messenger_call_reaper_owner', 'UPDATE'),
      ('call_reaper_settings', 'polling_interval', 'messenger_call_reaper', 'SELECT'),
      ('call_reaper_settings', 'paused', 'messenger_call_reaper', 'SELECT'),
      ('call_reaper_settings', 'batch_size', 'messenger_call_reaper', 'SELECT'),
      ('call_reaper_settings', 'wake_at_deadline', 'messenger_call_reaper', 'SELECT'),
      ('call_reaper_cron_jobs', 'kind', 'messenger_call_reaper', 'SELECT'),
      ('call_reaper_cron_jobs', 'schedule', 'messenger_call_reaper', 'SELECT'),
      ('call_reaper_cron_jobs', 'kind', 'messenger_call_reaper_operator', 'SELECT'),
      ('call_reaper_cron_jobs', 'schedule', 'messenger_call_reaper_operator', 'SELECT'),
      ('call_reaper_settings', 'paused', 'messenger_call_reaper_operator', 'UPDATE')$$,
    'column grants in messenger: the owner role''s transition columns, the job role''s three settings and its job''s recorded schedule, the operator''s pause flag');

SELECT is(ARRAY(SELECT r.rolname::text FROM pg_roles AS r
                 WHERE r.rolname LIKE 'messenger\_call\_reaper%'
                   AND has_database_privilege(r.oid, current_database(), 'CREATE') ORDER BY 1),
          '{}'::text[], 'no reaper role may create schemas in the database');
SELECT bag_eq(
    $$SELECT g.name, a.privilege_type::text
        FROM pg_namespace AS n CROSS JOIN LATERAL aclexplode(n.nspacl) AS a JOIN who AS g ON g.oid = a.grantee
       WHERE n.nspname = 'messenger' AND a.grantee <> n.nspowner
         AND a.grantee NOT IN (SELECT oid FROM product_role)$$,
    $$VALUES ('messenger_call_reaper', 'USAGE'), ('messenger_call_reaper_owner', 'USAGE'),
             ('messenger_call_reaper_monitor', 'USAGE'), ('messenger_call_reaper_operator', 'USAGE')$$,
    'schema messenger: USAGE for the four reaper roles, CREATE for none of them');

-- Roles: none is privileged or a member of anything; the job role logs in (pg_cron background
-- workers need that on PostgreSQL 15) and bounds a cycle (30 s) and an idle lock holder
-- (1 min); the owner role cannot log in.
SELECT bag_eq(
    $$SELECT r.rolname::text, r.rolcanlogin, r.rolsuper OR r.rolcreaterole OR r.rolcreatedb
                                               OR r.rolreplication OR r.rolbypassrls,
             (SELECT count(*)::integer FROM pg_auth_members AS m WHERE m.member = r.oid),
             coalesce(r.rolconfig, '{}')
        FROM pg_roles AS r WHERE r.rolname LIKE 'messenger\_call\_reaper%'$$,
    $$VALUES ('messenger_call_reaper', true, false, 0,
              ARRAY['statement_timeout=30s', 'idle_in_transaction_session_timeout=1min']
              || CASE WHEN current_setting('server_version_num')::integer >= 170000
                      THEN ARRAY['transaction_timeout=1min'] ELSE '{}' END),
             ('messenger_call_reaper_owner', false, false, 0, '{}'::text[]),
             ('messenger_call_reaper_monitor', true, false, 0, '{}'::text[]),
             ('messenger_call_reaper_operator', false, false, 0, '{}'::text[])$$,
    'the reaper''s roles: login, no privileged attribute, no membership, their settings');

SELECT * FROM finish();
ROLLBACK;
