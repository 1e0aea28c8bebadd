-- The deploy makes autovacuum pick call_sessions up after a drain (1 % + 1000 dead rows instead
-- of PostgreSQL's 20 %), so idle cycles stop walking the drain's dead index entries without a
-- manual VACUUM (make bench, after-drain part, measures the effect).
BEGIN;
SELECT plan(3);

SELECT ok((SELECT c.reloptions @> ARRAY['autovacuum_vacuum_scale_factor=0.01']
             FROM pg_catalog.pg_class AS c WHERE c.oid = 'messenger.call_sessions'::regclass),
          'call_sessions is vacuumed once 1 % of it is dead');
SELECT ok((SELECT c.reloptions @> ARRAY['autovacuum_vacuum_threshold=1000']
             FROM pg_catalog.pg_class AS c WHERE c.oid = 'messenger.call_sessions'::regclass),
          'plus a threshold of 1000 rows, so small tables are not vacuumed at every cycle');

SELECT bag_eq($$SELECT item FROM messenger.call_reaper_footprint
                 WHERE kind = 'reloption' AND target = 'TABLE messenger.call_sessions'$$,
              $$VALUES ('autovacuum_vacuum_scale_factor=0.01'), ('autovacuum_vacuum_threshold=1000')$$,
              'both options are recorded as the reaper''s, so its revert resets exactly those');

SELECT * FROM finish();
ROLLBACK;
