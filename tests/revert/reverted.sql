-- After `sqitch revert` (scripts/test-in-cluster, round trip): nothing is left that the next
-- deploy would trip over or run, and the cluster-wide state is as it was before the deploy.
-- reaper_revert.state_before is the copy of reaper_revert.cluster_state (cluster_state.sql)
-- taken before the deploy, which adopted one pre-existing role and created the two others.
BEGIN;
SELECT plan(5);

SELECT hasnt_schema('messenger', 'sqitch revert dropped schema messenger');
SELECT is(ARRAY(SELECT j.jobname::text FROM cron.job AS j
                 WHERE j.jobname IN ('messenger-call-timeout-reaper', 'messenger-call-reaper-purge',
                                     'messenger-call-reaper-warden', 'messenger-call-sessions-partman')
                 ORDER BY 1),
          '{}'::text[], 'no pg_cron job of the reaper or of its partitions is left scheduled');
SELECT is((SELECT count(*)::integer FROM partman.part_config WHERE parent_table = 'messenger.call_sessions')
          + (pg_catalog.to_regclass('partman.template_messenger_call_sessions') IS NOT NULL)::integer,
          0, 'pg_partman no longer manages messenger.call_sessions (no configuration, no template table)');
SELECT bag_eq('SELECT fact FROM reaper_revert.cluster_state',
              'SELECT fact FROM reaper_revert.state_before',
              'the reaper''s roles, the role settings and the cron grants are as before the deploy');
SELECT ok(EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'messenger_call_reaper_monitor'),
          'the role that existed before the deploy (adopted by it) is kept');

SELECT * FROM finish();
ROLLBACK;
