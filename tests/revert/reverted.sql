-- After `sqitch revert` (scripts/test-in-cluster, round trip): nothing of the reaper is left that
-- the next deploy would trip over or run, the messenger service's tables and calls stay, and the
-- cluster-wide state is as it was before the deploy. (That revert gives back every product row
-- and object exactly: tests/python/test_adoption.py.)
-- reaper_revert.state_before is the copy of reaper_revert.cluster_state (cluster_state.sql)
-- taken before the deploy, which adopted one pre-existing role and created the two others.
BEGIN;
SELECT plan(5);

SELECT is(ARRAY(SELECT c.relname::text FROM pg_class AS c
                 WHERE c.relnamespace = 'messenger'::regnamespace
                   AND (c.relname LIKE 'call\_reaper\_%' OR c.relname LIKE '%ix\_call\_due'
                        OR c.relname = 'ux_realtime_outbox_call_event')
                 ORDER BY 1)
          || ARRAY(SELECT p.oid::regprocedure::text FROM pg_proc AS p
                    WHERE p.pronamespace = 'messenger'::regnamespace ORDER BY 1)
          || ARRAY(SELECT t.typname::text FROM pg_type AS t
                    WHERE t.typnamespace = 'messenger'::regnamespace AND t.typname LIKE 'call\_reaper\_%' ORDER BY 1),
          '{}'::text[], 'sqitch revert removed every table, index, routine and type the reaper added');
SELECT ok(pg_catalog.to_regclass('messenger.call_sessions') IS NOT NULL
          AND pg_catalog.to_regclass('messenger.realtime_outbox') IS NOT NULL
          AND (SELECT count(*) FROM messenger.call_sessions) > 0,
          'the messenger service''s tables and their calls are still there');
SELECT is(ARRAY(SELECT j.jobname::text FROM cron.job AS j
                 WHERE j.jobname IN ('messenger-call-timeout-reaper', 'messenger-call-reaper-purge',
                                     'messenger-call-reaper-warden')
                 ORDER BY 1),
          '{}'::text[], 'no pg_cron job of the reaper is left scheduled');
SELECT bag_eq('SELECT fact FROM reaper_revert.cluster_state',
              'SELECT fact FROM reaper_revert.state_before',
              'the reaper''s roles, the role settings and the cron grants are as before the deploy');
SELECT ok(EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'messenger_call_reaper_monitor'),
          'the role that existed before the deploy (adopted by it) is kept');

SELECT * FROM finish();
ROLLBACK;
