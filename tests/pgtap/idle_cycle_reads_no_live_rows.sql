-- An idle cycle (nothing overdue) reads no call: no sequential scan of call_sessions and no
-- index entry of an archived call, a live Ringing call or a live Answered one, however many
-- there are. The Answered calls still talking that started before the stale window (ix_call_due's
-- key is started_at, which a progress update never changes; docs/design.md) are walked once, by
-- the first cycle, which leaves the stale-answered claim floor above them; the next idle cycle
-- starts there and reads none of them. With a few overdue calls (a cycle at the first one's
-- as_of, which trusts no floor) it reads those, and the talkers once more, and nothing else. Measured on the
-- real function through this transaction's own scan counters (pg_stat_get_xact_*), so it
-- catches any statement of the cycle, not only the claims.
BEGIN;
SELECT plan(8);

\ir fixtures/live_and_archived_calls.sql
ANALYZE messenger.call_sessions;
-- The fixture's live Answered calls that started before the stale cutoff (10:00): still talking.
SELECT count(*) AS talking FROM messenger.call_sessions
 WHERE status = 'Answered' AND started_at <= '2100-01-01 10:00+00' AND updated_at > '2100-01-01 10:00+00' \gset

SELECT count(*) AS fresh_talking FROM messenger.call_sessions
 WHERE status = 'Answered' AND started_at > '2100-01-01 09:59:45.001+00' AND started_at <= '2100-01-01 10:00:00.001+00'
   AND updated_at > '2100-01-01 10:00:00.001+00' \gset

CREATE TEMP TABLE reads (label text, scans bigint, seq_rows bigint, index_entries bigint);
CREATE FUNCTION pg_temp.snapshot(p_label text) RETURNS void LANGUAGE sql AS $$
    INSERT INTO reads
    SELECT p_label,
           pg_stat_get_xact_numscans('messenger.call_sessions'::regclass),
           pg_stat_get_xact_tuples_returned('messenger.call_sessions'::regclass),
           (SELECT sum(pg_stat_get_xact_tuples_returned(i.indexrelid))::bigint
              FROM pg_index AS i WHERE i.indrelid = 'messenger.call_sessions'::regclass
               AND i.indexrelid <> 'messenger.call_sessions_pkey'::regclass)
$$;

-- Rows other test files inserted and rolled back leave dead entries in the indexes until a
-- vacuum; the first cycle steps over those below the cutoff and marks them killed, and walks
-- the talkers, storing the floor past them. The measured cycle is the second one, a
-- millisecond later (a floor is trusted only at a later as_of).
CREATE TEMP TABLE warm_up AS SELECT * FROM messenger.reap_call_timeouts(as_of => '2100-01-01 12:00+00');
SELECT pg_temp.snapshot('before idle');
CREATE TEMP TABLE idle AS SELECT * FROM messenger.reap_call_timeouts(as_of => '2100-01-01 12:00:00.001+00');
SELECT pg_temp.snapshot('after idle');

SELECT is((SELECT ARRAY[missed_count, failed_count] FROM idle), ARRAY[0, 0], 'the idle cycle closes nothing');
SELECT is((SELECT a.scans - b.scans FROM reads a, reads b WHERE a.label = 'after idle' AND b.label = 'before idle'),
          0::bigint, 'the idle cycle never scans call_sessions sequentially');
SELECT is((SELECT a.seq_rows - b.seq_rows FROM reads a, reads b WHERE a.label = 'after idle' AND b.label = 'before idle'),
          0::bigint, 'the idle cycle reads no call_sessions row sequentially');
-- What it does read: the talkers in the fresh lane (the window's last 15 s, which no floor
-- covers) and the entry the floor is anchored at, by a claim and its count each, plus one probe;
-- plus, per phase, the floor's own entry once more: on the product's ix_call_active, which has
-- no call_id, a lane's lower bound (started_at, call_id) >= (k, id) is an index bound on
-- started_at and a filter on call_id, so the lane starting at the floor reads the calls of the
-- floor's started_at too.
SELECT cmp_ok((SELECT a.index_entries - b.index_entries FROM reads a, reads b
                WHERE a.label = 'after idle' AND b.label = 'before idle'),
              '<=', 2 * :fresh_talking::bigint + 2 + 1 + 2,
              'the idle cycle reads no index entry of 20 000 archived, 2 000 live Ringing or 2 000 live Answered calls, not even the '
              || :talking || ' still talking that started before the window: only the ' || :fresh_talking || ' in the fresh lane');

-- Three overdue Ringing calls and two stale Answered ones among them.
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing', t, NULL, t
  FROM generate_series(1, 3) AS g, LATERAL (SELECT timestamptz '2100-01-01 11:50+00' - g * interval '1 second') AS x (t)
UNION ALL
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Video', 'Answered', t - interval '1 hour',
       t - interval '59 minutes', t
  FROM generate_series(1, 2) AS g, LATERAL (SELECT timestamptz '2100-01-01 09:00+00' - g * interval '1 second') AS x (t);

SELECT pg_temp.snapshot('before busy');
CREATE TEMP TABLE busy AS SELECT * FROM messenger.reap_call_timeouts(as_of => '2100-01-01 12:00+00');
SELECT pg_temp.snapshot('after busy');

SELECT is((SELECT ARRAY[missed_count, failed_count] FROM busy), ARRAY[3, 2], 'the busy cycle closes the five overdue calls');
SELECT is((SELECT a.scans - b.scans FROM reads a, reads b WHERE a.label = 'after busy' AND b.label = 'before busy'),
          0::bigint, 'the busy cycle never scans call_sessions sequentially');
-- Each overdue entry is read at most three times: by the claim, by the skipped-locked count
-- and by the UPDATE's lookup of the claimed call (which may use ix_call_due too); plus, per
-- phase, the first healthy entry above the claim floor, which the floor probe reads; plus the
-- Answered calls still talking, twice (the claim and its count: at the warm-up's as_of, the
-- floor is not trusted), and the one entry where the new floor is anchored.
SELECT cmp_ok((SELECT a.index_entries - b.index_entries FROM reads a, reads b
                WHERE a.label = 'after busy' AND b.label = 'before busy'),
              '<=', 3 * 5 + 2 + 2 * :talking::bigint + 1, 'the busy cycle reads only index entries of overdue calls and of those still talking');
SELECT cmp_ok((SELECT a.index_entries - b.index_entries FROM reads a, reads b
                WHERE a.label = 'after busy' AND b.label = 'before busy'),
              '>=', 5::bigint, 'the counters do see the overdue entries the claims read');

SELECT * FROM finish();
ROLLBACK;
