-- Deploy call_timeout_reaper:indexes/ux_realtime_outbox_call_event to pg
-- Never push twice: at most one CallMissed/CallEnded row per (kind, call, recipient), enforced by
-- the database rather than trusted to every writer. Built online on the messenger service's
-- live outbox, and owned by record, never by name.
-- No transaction: CREATE INDEX CONCURRENTLY cannot run in one.
--   * Rows that already break the rule would fail the build after it read the whole table:
--     they stop the deploy first (SQLSTATE 23505), with the query that lists them. Nothing is
--     deleted: which duplicate to keep is the messenger team's call.
--   * Whatever an earlier failed or cancelled build of the reaper's left (recorded in
--     messenger.call_reaper_indexes, INVALID) is dropped.
--   * A unique index the messenger service already has on exactly these columns (for all
--     kinds) is the same guarantee: nothing is built.
--   * messenger._call_reaper_index_claim records the index before its build starts, keeps the
--     reaper's own, uses a product index of this name and definition as the
--     product's (never dropped), and refuses any other (55000).
--   * The comment tells a DBA reading \d+ whose index it is; ownership is the record's.

\set definition '(kind, reference_id, target_id) WHERE kind IN (''CallMissed'', ''CallEnded'')'

DO $$
DECLARE
    v_groups bigint;
BEGIN
    SELECT count(*) INTO v_groups
      FROM (SELECT FROM messenger.realtime_outbox AS o
             WHERE o.kind IN ('CallMissed', 'CallEnded')
             GROUP BY o.kind, o.reference_id, o.target_id
            HAVING count(*) > 1) AS d;
    IF v_groups > 0 THEN
        RAISE EXCEPTION 'messenger.realtime_outbox holds % (kind, reference_id, target_id) groups of CallMissed/CallEnded rows with more than one row; nothing was changed', v_groups
            USING ERRCODE = '23505',
                  DETAIL = 'The reaper adds a unique index on these columns for these kinds, so that a call is never pushed twice.',
                  HINT = 'List them with: SELECT kind, reference_id, target_id, array_agg(id ORDER BY id) AS ids FROM messenger.realtime_outbox WHERE kind IN (''CallMissed'', ''CallEnded'') GROUP BY 1, 2, 3 HAVING count(*) > 1; keep one row of each group, then deploy again.';
    END IF;
END
$$;

SELECT l.drop_statement, l.forget_statement FROM messenger._call_reaper_index_leftovers() AS l \gexec

SELECT pg_catalog.to_regclass('messenger.ux_realtime_outbox_call_event') IS NULL
       AND EXISTS (
           SELECT FROM pg_catalog.pg_index AS i
            WHERE i.indrelid = 'messenger.realtime_outbox'::pg_catalog.regclass
              AND i.indisunique AND i.indisvalid AND i.indpred IS NULL AND i.indexprs IS NULL
              AND i.indnkeyatts = 3
              AND (SELECT pg_catalog.array_agg(a.attname::text ORDER BY a.attname)
                     FROM pg_catalog.pg_attribute AS a
                    WHERE a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)) = '{kind,reference_id,target_id}')
       AS equivalent \gset

\if :equivalent
\echo 'messenger.realtime_outbox already has a unique index on (kind, reference_id, target_id): nothing to build'
\else
SELECT messenger._call_reaper_index_claim('indexes/ux_realtime_outbox_call_event', 'messenger.realtime_outbox'::pg_catalog.regclass,
                                          'ux_realtime_outbox_call_event', :'definition', true) AS build \gset
\if :build
CREATE UNIQUE INDEX CONCURRENTLY ux_realtime_outbox_call_event ON messenger.realtime_outbox :definition;
COMMENT ON INDEX messenger.ux_realtime_outbox_call_event IS
    'Added by call_timeout_reaper: at most one CallMissed/CallEnded row per call and recipient (indexes/ux_realtime_outbox_call_event).';
\endif
\endif
