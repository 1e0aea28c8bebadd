-- The planner settings of a cycle on a relation pair live in one place: messenger._reap_pair's
-- SET clause (generic plans, no sort, no JIT), which every routine it calls runs under. No
-- routine it reaches, directly or through others, sets one of its own, but _reap_close, whose
-- statement must sort its batch (enable_sort = on). The routines reached are found from their
-- source: each messenger.<routine>( it names. The cycle's one routine beside the pair,
-- messenger._reap_ledger, plans generically too: with custom plans its fold into the counters
-- was planned again every cycle (about 0.2 ms of a 2 ms busy cycle, bench cycle-cost).
BEGIN;
SELECT plan(4);

\ir fixtures/routine_calls.sql
CREATE TEMP TABLE reached AS
WITH RECURSIVE reach (oid) AS (
    SELECT 'messenger._reap_pair'::regproc::oid
    UNION
    SELECT c.callee FROM routine_calls AS c JOIN reach AS r ON c.caller = r.oid
)
SELECT r.oid::regproc::text AS routine,
       ARRAY(SELECT c FROM unnest(p.proconfig) AS c WHERE c NOT LIKE 'search_path=%' ORDER BY c) AS settings
  FROM reach AS r JOIN pg_proc AS p ON p.oid = r.oid;

SELECT is((SELECT settings FROM reached WHERE routine = 'messenger._reap_pair'),
          ARRAY['enable_sort=off', 'jit=off', 'plan_cache_mode=force_generic_plan'],
          '_reap_pair sets the cycle''s planner settings: generic plans, no sort, no JIT');
SELECT ok((SELECT count(*) FROM reached WHERE routine IN ('messenger._reap_claim', 'messenger._reap_claim_lane',
                                                          'messenger._reap_close', 'messenger._reap_first_passed')) = 4,
          'the routines it reaches are found from their source (the claim, its lanes, the close, the floor''s probe)');
SELECT is((SELECT array_agg(routine || ' ' || settings::text ORDER BY routine) FROM reached
            WHERE routine <> 'messenger._reap_pair' AND cardinality(settings) > 0),
          ARRAY['messenger._reap_close {enable_sort=on}'],
          'no routine it reaches sets a planner setting of its own, but _reap_close, which sorts its batch');

SELECT is((SELECT ARRAY(SELECT c FROM unnest(p.proconfig) AS c WHERE c NOT LIKE 'search_path=%' ORDER BY c)
             FROM pg_proc AS p WHERE p.oid = 'messenger._reap_ledger'::regproc),
          ARRAY['plan_cache_mode=force_generic_plan'],
          '_reap_ledger, run by the cycle beside the pair, plans its fold once per session');

SELECT * FROM finish();
ROLLBACK;
