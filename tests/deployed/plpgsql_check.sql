-- plpgsql_check finds nothing in any PL/pgSQL routine of schema messenger: one test per routine
-- (its findings, all warnings on, as "line: level sqlstate: message" lines), plus one that every
-- trigger function is attached to a table (plpgsql_check checks a trigger function against the
-- table it fires on; an unattached one could not be checked). The plan is the number of
-- routines deployed, so a new routine is checked without editing this file.
-- Run by scripts/test-in-cluster after sqitch deploy + verify, whatever PGTAP selects.
BEGIN;
CREATE EXTENSION IF NOT EXISTS plpgsql_check;

CREATE TEMP TABLE routines AS
SELECT p.oid::pg_catalog.regprocedure AS fn,
       CASE WHEN p.prorettype = 'pg_catalog.trigger'::pg_catalog.regtype
            THEN (SELECT t.tgrelid FROM pg_catalog.pg_trigger AS t
                   WHERE t.tgfoid = p.oid ORDER BY t.oid LIMIT 1)
            ELSE 0 END AS relid
  FROM pg_catalog.pg_proc AS p
  JOIN pg_catalog.pg_language AS l ON l.oid = p.prolang
 WHERE p.pronamespace = 'messenger'::pg_catalog.regnamespace
   AND l.lanname = 'plpgsql';

SELECT plan((SELECT count(*)::integer + 1 FROM routines));

SELECT is(ARRAY(SELECT fn::text FROM routines WHERE relid IS NULL ORDER BY 1), '{}'::text[],
          'every PL/pgSQL trigger function in messenger fires on a table, so it can be checked');

SELECT is(ARRAY(SELECT pg_catalog.format('line %s: %s %s: %s%s%s', c.lineno, c.level, c.sqlstate,
                                         c.message, ' DETAIL: ' || c.detail, ' HINT: ' || c.hint)
                  FROM public.plpgsql_check_function_tb(r.fn, coalesce(r.relid, 0),
                                                        fatal_errors := false, all_warnings := true) AS c),
          '{}'::text[],
          'plpgsql_check: no finding in ' || r.fn::text)
  FROM routines AS r
 ORDER BY r.fn::text;

SELECT * FROM finish();
ROLLBACK;
