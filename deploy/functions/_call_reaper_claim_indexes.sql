-- Deploy call_timeout_reaper:functions/_call_reaper_claim_indexes to pg

BEGIN;

-- messenger._call_reaper_claim_indexes(calls)
--
-- Contract: the valid indexes of a calls relation that the claims can walk as a range scan in
-- (started_at, call_id) order: btree, keyed first on status then started_at (plain columns;
-- more keys may follow, e.g. ix_call_due's call_id), either not partial or partial on exactly
-- status IN ('Ringing', 'Answered') (compared with its casts taken out, so a text, varchar or
-- enum status alike). The one home of that rule: the deploy uses a product index of it
-- (the service's own index of active calls) instead of building ix_call_due, the verify asks
-- that the claims have one, messenger._reap_pair that a pair's calls relation has one.
-- Where the index has no call_id after started_at, a claim takes the calls of one started_at in
-- the heap's order, as the index holds them (docs/design.md, "The due rule and its one index").
-- A catalog read only; NULL or an unknown relation gives no rows.
CREATE FUNCTION messenger._call_reaper_claim_indexes(p_calls regclass)
RETURNS SETOF regclass
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
SELECT i.indexrelid::pg_catalog.regclass
  FROM pg_catalog.pg_index AS i
  JOIN pg_catalog.pg_class AS c ON c.oid = i.indexrelid
  JOIN pg_catalog.pg_am AS m ON m.oid = c.relam
 WHERE i.indrelid = p_calls
   AND i.indisvalid
   AND m.amname = 'btree'
   AND i.indexprs IS NULL
   AND i.indnkeyatts >= 2
   AND (SELECT a.attname FROM pg_catalog.pg_attribute AS a
         WHERE a.attrelid = i.indrelid AND a.attnum = i.indkey[0]) = 'status'
   AND (SELECT a.attname FROM pg_catalog.pg_attribute AS a
         WHERE a.attrelid = i.indrelid AND a.attnum = i.indkey[1]) = 'started_at'
   AND (i.indpred IS NULL
        OR pg_catalog.regexp_replace(
               pg_catalog.regexp_replace(pg_catalog.pg_get_expr(i.indpred, i.indrelid),
                                         '::[[:alnum:]_." ]+(\[\])?', '', 'g'),
               '[()]', '', 'g') = 'status = ANY ARRAY[''Ringing'', ''Answered'']')
 ORDER BY i.indexrelid
$$;

COMMENT ON FUNCTION messenger._call_reaper_claim_indexes(regclass) IS
$$The valid indexes of a calls relation the claims can read: btree on (status, started_at, ...), not partial or partial on status IN ('Ringing', 'Answered'). The deploy uses the product's own (ix_call_active) instead of building ix_call_due.$$;
REVOKE ALL ON FUNCTION messenger._call_reaper_claim_indexes(regclass) FROM PUBLIC;
-- messenger._reap_pair (the owner's) checks a pair's calls relation with it.
GRANT EXECUTE ON FUNCTION messenger._call_reaper_claim_indexes(regclass) TO messenger_call_reaper_owner;

COMMIT;
