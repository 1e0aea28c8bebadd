-- The stale-answered claim never scans call_sessions sequentially and never walks a call that
-- is not overdue: its plan is a range scan of ix_call_due bounded by the cutoff on the due key,
-- updated_at for Answered calls (ix_call_active, keyed on started_at, would walk every Answered
-- call), in the generic plan PL/pgSQL may cache as well as in a custom one, and on a table
-- where live and archived calls far outnumber the overdue ones. The statement explained is
-- checked to be, word for word, the claim _reap_phase runs.
BEGIN;
SELECT plan(12);

-- 20 000 archived calls, 2 000 live Ringing ones (inside the 45 s window), 2 000 live Answered
-- ones (progress in the last 2 h), and 30 Answered calls whose last progress is more than 2 h
-- before as_of 2100-01-01 12:00. started_at runs against updated_at so that an index on
-- started_at cannot bound the scan by accident.
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, end_reason,
        started_at, answered_at, ended_at, updated_at, duration_seconds)
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ended', 'Hangup',
       t, t + interval '5 seconds', t + interval '1 minute', t + interval '1 minute', 55
  FROM generate_series(1, 20000) AS g, LATERAL (SELECT timestamptz '2100-01-01 11:00+00' - g * interval '1 minute') AS x (t)
UNION ALL
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing', NULL, t, NULL, NULL, t, NULL
  FROM generate_series(1, 2000) AS g, LATERAL (SELECT timestamptz '2100-01-01 12:00+00' - g * interval '20 milliseconds') AS x (t)
UNION ALL
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Video', 'Answered', NULL,
       t - interval '1 hour', t - interval '59 minutes', NULL, t, NULL
  FROM generate_series(1, 2000) AS g, LATERAL (SELECT timestamptz '2100-01-01 12:00+00' - g * interval '3 seconds') AS x (t)
UNION ALL
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Video', 'Answered', NULL,
       timestamptz '2100-01-01 11:00+00' + g * interval '1 second', timestamptz '2100-01-01 11:00+00' + g * interval '1 second',
       NULL, t, NULL
  FROM generate_series(1, 30) AS g, LATERAL (SELECT timestamptz '2100-01-01 09:50+00' - g * interval '1 second') AS x (t);
ANALYZE messenger.call_sessions;

-- The claim as _reap_phase writes it; its PL/pgSQL variables become the prepared statement's
-- parameters, exactly as PL/pgSQL itself passes them.
CREATE TEMP TABLE claim (sql text);
INSERT INTO claim VALUES ($$SELECT s.call_id, s.started_at, messenger.call_due_key(s.status, s.started_at, s.updated_at) AS due_key
              FROM messenger.call_sessions AS s
             WHERE s.status = v_status
               AND (messenger.call_due_key(s.status, s.started_at, s.updated_at), s.call_id) >= (v_lane_lo, v_lane_lo_id)
               AND messenger.call_due_key(s.status, s.started_at, s.updated_at) <= v_lane_hi
               AND (NOT v_quarantined OR NOT EXISTS (SELECT FROM messenger.call_reaper_quarantine AS q WHERE q.call_id = s.call_id))
             ORDER BY messenger.call_due_key(s.status, s.started_at, s.updated_at), s.call_id
             LIMIT v_limit
               FOR NO KEY UPDATE OF s SKIP LOCKED$$);
SELECT ok(strpos(regexp_replace(pg_get_functiondef('messenger._reap_phase(text, uuid, timestamptz, interval, integer, interval, interval, interval, integer)'::regprocedure), '\s+', ' ', 'g'),
                 (SELECT regexp_replace(sql, '\s+', ' ', 'g') FROM claim)) > 0,
          'the statement explained here is the stale-answered claim _reap_phase runs');

CREATE FUNCTION pg_temp.explain(p_sql text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    v_plan jsonb;
BEGIN
    EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON) ' || p_sql INTO v_plan;
    RETURN v_plan;
END
$$;
DO $$
BEGIN
    EXECUTE 'PREPARE claim_stale (text, timestamptz, timestamptz, integer, uuid, boolean) AS '
         || replace(replace(replace(replace(replace(replace((SELECT sql FROM claim), 'v_status', '$1'), 'v_lane_lo_id', '$5'),
                            'v_lane_lo', '$2'), 'v_lane_hi', '$3'), 'v_limit', '$4'), 'v_quarantined', '$6');
END
$$;

-- Every plan node that reads call_sessions, for the generic and for a custom plan.
CREATE TEMP TABLE scans (mode text, node jsonb);
-- _reap_phase's own SET clause: a claim must never sort its lane.
SELECT ok((SELECT 'enable_sort=off' = ANY (proconfig) FROM pg_proc
            WHERE oid = 'messenger._reap_phase(text, uuid, timestamptz, interval, integer, interval, interval, interval, integer)'::regprocedure),
          '_reap_phase runs its claims with enable_sort off');
SET LOCAL enable_sort = off;
SET LOCAL plan_cache_mode = force_generic_plan;
INSERT INTO scans
SELECT 'generic', n
  FROM jsonb_path_query(pg_temp.explain($$EXECUTE claim_stale('Answered', '-infinity', '2100-01-01 10:00+00', 200, 'ffffffff-ffff-ffff-ffff-ffffffffffff', true)$$),
                        'strict $.** ? (@."Relation Name" == "call_sessions")') AS n;
SET LOCAL plan_cache_mode = force_custom_plan;
INSERT INTO scans
SELECT 'custom', n
  FROM jsonb_path_query(pg_temp.explain($$EXECUTE claim_stale('Answered', '-infinity', '2100-01-01 10:00+00', 200, 'ffffffff-ffff-ffff-ffff-ffffffffffff', true)$$),
                        'strict $.** ? (@."Relation Name" == "call_sessions")') AS n;
RESET plan_cache_mode;

SELECT is((SELECT count(*)::integer FROM scans WHERE mode = 'generic'), 1, 'the generic plan reads call_sessions once');
SELECT is((SELECT count(*)::integer FROM scans WHERE mode = 'custom'), 1, 'the custom plan reads call_sessions once');
SELECT is((SELECT count(*)::integer FROM scans WHERE node->>'Node Type' NOT IN ('Index Scan', 'Index Only Scan')),
          0, 'neither plan scans call_sessions sequentially (or by bitmap): only index scans');
SELECT ok((SELECT node->>'Index Cond' FROM scans WHERE mode = 'generic') LIKE '%<= $3)%',
          'the generic plan bounds the index range by the cutoff parameter');
SELECT ok((SELECT node->>'Index Cond' FROM scans WHERE mode = 'custom') LIKE '%<= ''2100-01-01 10:00:00+00''%',
          'the custom plan bounds the index range by the cutoff');
SELECT ok((SELECT bool_and(node->>'Index Name' = 'ix_call_due') FROM scans),
          'the claim reads ix_call_due, the one index of the due rule');
SELECT is((SELECT (node->>'Actual Rows')::integer FROM scans WHERE mode = 'generic'), 30,
          'the generic plan reads exactly the 30 overdue calls');
SELECT is((SELECT coalesce((node->>'Rows Removed by Filter')::integer, 0) FROM scans WHERE mode = 'generic'), 0,
          'the generic plan reads no call it then has to filter out');
SELECT is((SELECT (node->>'Actual Rows')::integer FROM scans WHERE mode = 'custom'), 30,
          'the custom plan reads exactly the 30 overdue calls');
SELECT is((SELECT coalesce((node->>'Rows Removed by Filter')::integer, 0) FROM scans WHERE mode = 'custom'), 0,
          'the custom plan reads no call it then has to filter out');

SELECT * FROM finish();
ROLLBACK;
