-- Deploy call_timeout_reaper:tables/call_sessions_autovacuum to pg
-- The options themselves were set by the released change (tables/call_sessions_autovacuum@v1.0.0:
-- both, and only where the messenger service had neither; why: docs/design.md, "Adoption").
-- This records them in messenger.call_reaper_footprint as the reaper's, so that the revert resets
-- exactly the ones still holding the reaper's value. The released change sets both or none, so
-- both holding the reaper's values are taken as its own; a table where the service has changed
-- one of them since has only its other one left of the reaper's, and this cannot tell which
-- one that was, so it records nothing (the released revert then keeps both, as it always did).
-- A partitioned call_sessions carries no options: nothing to record.

BEGIN;

INSERT INTO messenger.call_reaper_footprint (kind, target, item, set_by)
SELECT 'reloption', 'TABLE messenger.call_sessions', o.option, 'tables/call_sessions_autovacuum'
  FROM pg_catalog.pg_class AS c
 CROSS JOIN pg_catalog.unnest(ARRAY['autovacuum_vacuum_scale_factor=0.01', 'autovacuum_vacuum_threshold=1000']) AS o (option)
 WHERE c.oid = 'messenger.call_sessions'::pg_catalog.regclass AND c.relkind = 'r'
   AND c.reloptions @> ARRAY['autovacuum_vacuum_scale_factor=0.01', 'autovacuum_vacuum_threshold=1000'];

COMMIT;
