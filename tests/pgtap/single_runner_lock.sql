-- The single-runner lock is a transaction-level advisory lock on the documented key, and the
-- transaction that holds it is bounded by the lock TTL.
BEGIN;
SELECT plan(4);

SELECT is(current_setting('idle_in_transaction_session_timeout'), '0',
          'before a cycle this session has no idle timeout');
UPDATE messenger.call_reaper_settings SET lock_ttl = '42 seconds';
CREATE TEMP TABLE r AS SELECT * FROM messenger.reap_call_timeouts(as_of => '2000-01-01');
SELECT ok((SELECT lock_acquired FROM r), 'the cycle took the lock');
SELECT is((SELECT count(*)::integer FROM pg_locks
            WHERE locktype = 'advisory' AND pid = pg_backend_pid()
              AND classid = 1667329132 AND objid = 1919246704 AND objsubid = 1 AND granted),
          1, 'the lock is the advisory lock on key 7161124095527313776, held by this transaction');
SELECT is(current_setting('idle_in_transaction_session_timeout'), '42s',
          'the rest of the transaction is bounded by the configured lock TTL');

SELECT * FROM finish();
ROLLBACK;
