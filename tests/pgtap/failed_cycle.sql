-- An unexpected error (not a poison call) rolls back both phases of the cycle, yet the run is
-- recorded as failed with its SQLSTATE and counted as an error.
BEGIN;
SELECT plan(6);
\ir fixtures/idle_runs_folded.sql
SET LOCAL client_min_messages = error;

-- Quarantining a poison call fails too: the cycle cannot isolate it and must give up whole.
CREATE FUNCTION pg_temp.refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'refused by test' USING ERRCODE = 'P0001';
END $$;
CREATE TRIGGER test_refuse_close BEFORE UPDATE ON messenger.call_sessions
    FOR EACH ROW WHEN (NEW.status = 'Failed') EXECUTE FUNCTION pg_temp.refuse();
CREATE TRIGGER test_refuse_quarantine BEFORE INSERT ON messenger.call_reaper_quarantine
    FOR EACH ROW EXECUTE FUNCTION pg_temp.refuse();

INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
VALUES ('00000000-0000-0000-0000-00000000fa01', gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing',
        '2100-01-01 00:00+00', NULL, '2100-01-01 00:00+00'),
       ('00000000-0000-0000-0000-00000000fa02', gen_random_uuid(), gen_random_uuid(), 'Video', 'Answered',
        '2100-01-01 00:00+00', '2100-01-01 00:00:05+00', '2100-01-01 00:00:05+00');
CREATE TEMP TABLE counters_before AS SELECT * FROM messenger.call_reaper_counters;

CREATE TEMP TABLE r AS SELECT * FROM messenger.reap_call_timeouts(as_of => '2100-01-01 06:00+00');

SELECT is((SELECT result FROM r), 'failed', 'the cycle reports failure instead of raising');
SELECT is((SELECT status FROM messenger.call_sessions WHERE call_id = '00000000-0000-0000-0000-00000000fa01'),
          'Ringing', 'phase 1 work of a rolled-back cycle is rolled back too');
SELECT is((SELECT count(*)::integer FROM messenger.realtime_outbox
            WHERE reference_id IN ('00000000-0000-0000-0000-00000000fa01', '00000000-0000-0000-0000-00000000fa02')),
          0, 'a rolled-back cycle leaves no outbox row');
SELECT results_eq(
    $$SELECT result, error_sqlstate, missed_count, failed_count FROM messenger.call_reaper_runs
       WHERE run_id = (SELECT run_id FROM r)$$,
    $$VALUES ('failed'::text, 'P0001'::text, 0, 0)$$,
    'the failed run is in the ledger with its SQLSTATE and no closures');
SELECT is((SELECT ARRAY[k.runs_rolled_back - b.runs_rolled_back, k.errors - b.errors, k.runs_completed - b.runs_completed]
             FROM messenger.call_reaper_counters k, counters_before b),
          ARRAY[1, 1, 0]::bigint[], 'a rolled-back cycle counts one rolled-back run and one error');
SELECT ok((SELECT last_success_at IS NOT DISTINCT FROM (SELECT last_success_at FROM counters_before)
             FROM messenger.call_reaper_counters),
          'a rolled-back cycle does not move the time of the last successful cycle');

SELECT * FROM finish();
ROLLBACK;
