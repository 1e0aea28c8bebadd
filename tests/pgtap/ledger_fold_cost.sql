-- A week of ledger costs a busy cycle and a scrape nothing: both add up only the idle runs after
-- the counters' fold point, a range of ix_call_reaper_runs_started_at, however many runs the
-- ledger keeps (40 000 at a 15 s polling interval and 7 days of retention). Planned while the
-- ledger's statistics still say it is empty, a join to the counters row walked every run and
-- probed the counters row once per run. Measured through this transaction's own buffer
-- counters of the ledger, the counters row and their indexes.
BEGIN;
SELECT plan(6);

-- A week of completed idle runs, every one folded into the counters an hour ago except the
-- last three.
INSERT INTO messenger.call_reaper_runs
       (run_id, started_at, finished_at, as_of, result, lock_acquired, batch_size, ring_timeout,
        stale_timeout, duration_ms)
SELECT gen_random_uuid(), t, t + interval '2 milliseconds', t, 'completed', true, 200, interval '1 minute',
       interval '2 hours', 2
  FROM generate_series(1, 40000) AS g, LATERAL (SELECT now() - g * interval '15 seconds') AS x (t);
UPDATE messenger.call_reaper_counters SET idle_folded_through = now() - interval '50 seconds' WHERE singleton;

CREATE TEMP TABLE cost (label text, blocks bigint);
CREATE FUNCTION pg_temp.snapshot(p_label text) RETURNS void LANGUAGE sql AS $$
    INSERT INTO cost
    SELECT p_label, sum(pg_stat_get_xact_blocks_fetched(c.oid))::bigint
      FROM pg_class AS c
     WHERE c.oid IN ('messenger.call_reaper_runs'::regclass, 'messenger.call_reaper_counters'::regclass)
        OR c.oid IN (SELECT i.indexrelid FROM pg_index AS i
                      WHERE i.indrelid IN ('messenger.call_reaper_runs'::regclass,
                                           'messenger.call_reaper_counters'::regclass))
$$;

-- What the scrape must add (read before the measured statements).
CREATE TEMP TABLE expected AS
SELECT (SELECT k.runs_completed FROM messenger.call_reaper_counters AS k WHERE k.singleton) AS folded,
       (SELECT count(*) FROM messenger.call_reaper_runs AS r
         WHERE r.started_at > now() - interval '50 seconds' AND r.lock_acquired AND r.result = 'completed') AS unfolded;
SELECT pg_temp.snapshot('scrape before');
CREATE TEMP TABLE scrape AS SELECT * FROM messenger.call_reaper_metrics();
SELECT pg_temp.snapshot('scrape after');
-- Again once autovacuum would have analyzed the ledger.
ANALYZE messenger.call_reaper_runs;
SELECT pg_temp.snapshot('analyzed before');
CREATE TEMP TABLE scrape_analyzed AS SELECT * FROM messenger.call_reaper_metrics();
SELECT pg_temp.snapshot('analyzed after');

-- One due call makes the cycle busy, so it folds the idle runs into the counters.
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
VALUES (gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing',
        '2099-12-31 23:00+00', NULL, '2099-12-31 23:00+00');
SELECT pg_temp.snapshot('cycle before');
CREATE TEMP TABLE busy AS SELECT * FROM messenger.reap_call_timeouts(as_of => '2100-01-01 00:00+00');
SELECT pg_temp.snapshot('cycle after');

CREATE TEMP TABLE delta AS
SELECT (sum(c.blocks) FILTER (WHERE c.label = 'scrape after') - sum(c.blocks) FILTER (WHERE c.label = 'scrape before'))::bigint AS scrape_blocks,
       (sum(c.blocks) FILTER (WHERE c.label = 'analyzed after') - sum(c.blocks) FILTER (WHERE c.label = 'analyzed before'))::bigint AS analyzed_blocks,
       (sum(c.blocks) FILTER (WHERE c.label = 'cycle after') - sum(c.blocks) FILTER (WHERE c.label = 'cycle before'))::bigint AS cycle_blocks
  FROM cost AS c;
SELECT diag(format('ledger and counters buffers beside 40 000 runs: a scrape %s (%s once analyzed), a busy cycle %s',
                   scrape_blocks, analyzed_blocks, cycle_blocks)) FROM delta;

SELECT is((SELECT s.runs_completed - coalesce(s.idle_cycles, 0) - e.folded FROM scrape AS s, expected AS e),
          (SELECT unfolded FROM expected),
          'the scrape adds the idle runs after the fold point (the last three of the week) to the counters');
SELECT cmp_ok((SELECT scrape_blocks FROM delta), '<=', 40::bigint,
              'a scrape reads a few ledger and counters pages, not the 40 000 runs');
SELECT cmp_ok((SELECT analyzed_blocks FROM delta), '<=', 40::bigint,
              'so does a scrape once the ledger is analyzed');
SELECT is((SELECT missed_count FROM busy), 1, 'the cycle is busy: it closes its call');
SELECT cmp_ok((SELECT cycle_blocks FROM delta), '<=', 60::bigint,
              'a busy cycle reads a few ledger and counters pages, not the 40 000 runs');
SELECT ok((SELECT idle_folded_through > now() - interval '50 seconds' FROM messenger.call_reaper_counters WHERE singleton),
          'the busy cycle moved the fold point');

SELECT * FROM finish();
ROLLBACK;
