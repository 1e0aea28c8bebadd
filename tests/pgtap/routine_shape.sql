-- A routine a newcomer can read in one sitting: no routine of schema messenger has a body over
-- 120 lines or more than 8 arguments (arguments that go together are a record), and the pg_cron
-- job's entry point reaches the UPDATE of call_sessions within 4 routine levels (the entry
-- point is level 1) and every claim of calls within 5. Read from the deployed catalog: pg_proc's pronargs and prosrc, the calls
-- from each routine's source (each messenger.<routine>( it names).
BEGIN;
SELECT plan(4);

CREATE TEMP TABLE measured AS
SELECT p.oid::regproc::text AS routine, 'lines' AS measure,
       cardinality(string_to_array(btrim(p.prosrc, E'\n'), E'\n')) AS value
  FROM pg_proc AS p WHERE p.pronamespace = 'messenger'::regnamespace
UNION ALL
-- The arguments a caller passes: a procedure's pronargs counts its OUT and INOUT arguments,
-- which are what its CALL returns (drain_call_timeouts' cycles, missed, failed).
SELECT p.oid::regproc::text, 'arguments',
       p.pronargs - CASE WHEN p.prokind = 'p' AND p.proargmodes IS NOT NULL
                         THEN cardinality(array_positions(p.proargmodes, 'o'))
                              + cardinality(array_positions(p.proargmodes, 'b')) ELSE 0 END
  FROM pg_proc AS p WHERE p.pronamespace = 'messenger'::regnamespace;

-- Each routine the job's entry point reaches, at its shortest chain of calls (the entry point
-- counts as 1).
\ir fixtures/routine_calls.sql
CREATE TEMP TABLE reached AS
WITH RECURSIVE chain (oid, depth) AS (
    SELECT 'messenger.run_call_reaper_ticks'::regproc::oid, 1
    UNION
    SELECT c.callee, h.depth + 1 FROM routine_calls AS c JOIN chain AS h ON c.caller = h.oid WHERE h.depth < 12
)
SELECT h.oid, min(h.depth) AS depth, p.prosrc FROM chain AS h JOIN pg_proc AS p ON p.oid = h.oid GROUP BY h.oid, p.prosrc;

-- The UPDATE that closes calls: the nearest routine whose source has it. The claim path: the
-- deepest of the routines whose source claims calls (FOR NO KEY UPDATE SKIP LOCKED), so every
-- claim the job can run is within it (the deadline closure's at 2, the full cycle's lanes deeper).
INSERT INTO measured
SELECT 'messenger.run_call_reaper_ticks', 'depth', min(r.depth)
  FROM reached AS r WHERE r.prosrc ~ '\mUPDATE\s+messenger\.call_sessions(\s+AS\s+\w+)?\s+SET\s+status\M'
UNION ALL
SELECT 'messenger.run_call_reaper_ticks', 'claim depth', max(r.depth)
  FROM reached AS r WHERE r.prosrc ~* 'FOR\s+NO\s+KEY\s+UPDATE(\s+OF\s+\w+)?\s+SKIP\s+LOCKED';

CREATE TEMP TABLE limits (measure text, most integer);
INSERT INTO limits VALUES ('lines', 120), ('arguments', 8), ('depth', 4), ('claim depth', 5);

SELECT is((SELECT array_agg(routine || ' ' || measure) FROM measured WHERE value IS NULL), NULL,
          'every routine is measured');
SELECT ok((SELECT value FROM measured WHERE measure = 'depth') IS NOT NULL,
          'the job''s entry point reaches the UPDATE of call_sessions through the routines'' calls');
SELECT ok((SELECT value FROM measured WHERE measure = 'claim depth') >= 2,
          'the job''s entry point reaches the claims through the routines'' calls');
SELECT is((SELECT array_agg(m.routine || ' ' || m.measure || ' ' || m.value ORDER BY m.routine, m.measure)
             FROM measured AS m JOIN limits AS l USING (measure)
            WHERE m.value > l.most),
          NULL, 'no routine is over a limit (120 lines, 8 arguments, 4 levels to the UPDATE, 5 to the deepest claim)');
SELECT * FROM finish();
ROLLBACK;
