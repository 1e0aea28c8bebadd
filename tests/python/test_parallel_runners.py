"""Parallel runners: 6 connections call the reaper in tight loops over thousands of overdue
calls while the scheduled pg_cron job runs too. Every call is transitioned exactly once, the
counts reported by the runners plus those the job's runs recorded add up to the calls
closed, and each (event, recipient) has exactly one outbox row.

The calls use real-time timestamps (overdue at now()) and the runners the default as_of, so
the job sees the same calls. A feeder keeps adding overdue calls until enough were made
and a run of the job has taken the lock and closed calls inside the window: a skipped run, or
one that found the runners had closed everything, proves nothing about the job. Six runners in
tight loops hold the lock nearly all the time and close each wave within milliseconds, so once
enough calls were made the runners slow down (a cycle a second each, the lock free most of the
time) while the feeder goes on, until the job's tick wins the lock with calls left to close;
then they drain at full speed with the job. An audit trigger records every status change,
which is what "transitioned exactly once" is checked against.
"""

import threading
import time
from collections import Counter

import psycopg
import pytest
from reaper_support import JOB_NAME, assert_all_or_nothing, job, reap

RUNNERS = 6
MIN_CALLS = 3000
WAVE = 150          # calls per feeder insert: 2/3 Ringing, 1/3 stale Answered
BATCH_SIZE = 100    # the runners'; the job uses the configured one
DEADLINE_S = 120  # one job tick is due every 15 s; room for a loaded machine
RELAXED_NAP_S = 1.0  # a slowed runner's pause after each cycle


@pytest.fixture
def audit(conn):
    """Records every status change of a call, whoever makes it."""
    conn.execute("CREATE SCHEMA reaper_parallel_test")
    conn.execute("CREATE TABLE reaper_parallel_test.transition"
                 " (call_id uuid, old_status text, new_status text, xid xid8)")
    conn.execute("""
        CREATE FUNCTION reaper_parallel_test.record() RETURNS trigger
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
        BEGIN
            INSERT INTO reaper_parallel_test.transition
            VALUES (NEW.call_id, OLD.status, NEW.status, pg_current_xact_id());
            RETURN NULL;
        END $$""")
    conn.execute("CREATE TRIGGER reaper_parallel_audit AFTER UPDATE ON messenger.call_sessions"
                 " FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status)"
                 " EXECUTE FUNCTION reaper_parallel_test.record()")
    yield "reaper_parallel_test.transition"
    conn.execute("DROP TRIGGER reaper_parallel_audit ON messenger.call_sessions")
    conn.execute("DROP SCHEMA reaper_parallel_test CASCADE")


def feed(conn, n):
    """n overdue calls at the server's now(): Ringing past 45 s, Answered idle past 2 h."""
    rows = conn.execute("""
        INSERT INTO messenger.call_sessions
               (call_id, caller_user_id, callee_user_id, media_type, status,
                started_at, answered_at, updated_at)
        SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(),
               CASE WHEN i %% 2 = 0 THEN 'Audio' ELSE 'Video' END,
               CASE WHEN i %% 3 = 0 THEN 'Answered' ELSE 'Ringing' END,
               now() - CASE WHEN i %% 3 = 0 THEN interval '3 hours' ELSE interval '1 minute' END,
               CASE WHEN i %% 3 = 0 THEN now() - interval '3 hours' END,
               now() - CASE WHEN i %% 3 = 0 THEN interval '2 hours 1 minute'
                            ELSE interval '1 minute' END
          FROM generate_series(1, %s) AS i
        RETURNING call_id""", [n]).fetchall()
    return [r[0] for r in rows]


def test_parallel_runners_and_the_job_close_every_call_once(conn, dsn, calls, audit, capsys):
    scheduled = job(conn)
    assert scheduled is not None, f"pg_cron job {JOB_NAME} is not scheduled"
    assert scheduled["active"], f"pg_cron job {JOB_NAME} is paused: it must run during this test"
    started = conn.execute("SELECT clock_timestamp()").fetchone()[0]
    runner_results = [[] for _ in range(RUNNERS)]
    errors = []
    stop = threading.Event()
    relaxed = threading.Event()  # set: the runners leave the lock free most of the time

    def runner(i):
        try:
            with psycopg.connect(dsn, autocommit=True,
                                 application_name=f"reaper-test-runner-{i}") as c:
                while not stop.is_set():
                    result = reap(c, batch_size=BATCH_SIZE)
                    runner_results[i].append(result)
                    # Like a poller: straight on while there is work, back off when idle;
                    # the gaps let the job win the lock too.
                    if relaxed.is_set():
                        stop.wait(RELAXED_NAP_S)
                    elif not result["lock_acquired"]:
                        time.sleep(0.002)
                    elif result["missed_count"] + result["failed_count"] == 0:
                        time.sleep(0.1)
        except Exception as exc:  # noqa: BLE001 -- reported by the test thread
            errors.append(exc)
            stop.set()

    # The job's cycles are told apart in the ledger by their batch_size (the configured one).
    configured = conn.execute("SELECT batch_size FROM messenger.call_reaper_settings").fetchone()[0]
    assert configured != BATCH_SIZE

    def job_runs():
        return conn.execute(
            "SELECT run_id, result, missed_count, failed_count, skipped_locked_count,"
            " poisoned_count FROM messenger.call_reaper_runs"
            " WHERE started_at >= %s AND batch_size = %s", [started, configured]).fetchall()

    def job_closed_calls(runs):
        return [r for r in runs if r[1] != "skipped" and r[2] + r[3] > 0]

    threads = [threading.Thread(target=runner, args=(i,)) for i in range(RUNNERS)]
    for t in threads:
        t.start()
    ids = []
    deadline = time.monotonic() + DEADLINE_S
    try:
        # Feed until enough calls exist and a job run has taken the lock and closed some.
        while len(ids) < MIN_CALLS or not job_closed_calls(job_runs()):
            assert time.monotonic() < deadline, \
                f"no run of the job took the lock and closed a call within {DEADLINE_S} s" \
                f" ({len(ids)} calls fed, job runs: {job_runs()})"
            assert not errors, errors
            if len(ids) >= MIN_CALLS:
                relaxed.set()
            new = feed(conn, WAVE)
            calls.ids.extend(new)
            ids.extend(new)
            time.sleep(0.25)
        relaxed.clear()
        # Drain: until none of the calls is active any more.
        while conn.execute("SELECT count(*) FROM messenger.call_sessions WHERE call_id = ANY(%s)"
                           " AND status IN ('Ringing', 'Answered')", [ids]).fetchone()[0]:
            assert time.monotonic() < deadline, "the runners did not drain the calls in time"
            assert not errors, errors
            time.sleep(0.1)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors

    results = [r for rs in runner_results for r in rs]
    by_job = job_runs()
    # Every runner cycle, skipped ones included, is in the ledger once, but an idle one on the
    # clock (completed, nothing closed: counted in call_reaper_idle_cycles, no row).
    recorded = [r[0] for r in conn.execute(
        "SELECT run_id FROM messenger.call_reaper_runs WHERE started_at >= %s"
        " AND batch_size = %s", [started, BATCH_SIZE])]
    idle = {r["run_id"] for r in results
            if r["result"] == "completed" and r["missed_count"] + r["failed_count"] + r["poisoned_count"] == 0}
    assert len(recorded) == len(set(recorded))
    assert {r["run_id"] for r in results} - idle <= set(recorded) <= {r["run_id"] for r in results}
    runner_closed = sum(r["missed_count"] + r["failed_count"] for r in results)
    job_closed = sum(r[2] + r[3] for r in by_job)
    n_ringing = conn.execute("SELECT count(*) FROM messenger.call_sessions"
                             " WHERE call_id = ANY(%s) AND status = 'Missed'", [ids]).fetchone()[0]
    report = (f"{RUNNERS} runners, {len(ids)} calls ({n_ringing} Ringing), "
              f"{len(results)} runner cycles ({sum(r['lock_acquired'] for r in results)} with"
              f" the lock) closed {runner_closed}; {len(by_job)} job runs"
              f" ({sum(r[1] != 'skipped' for r in by_job)} with the lock) closed {job_closed}")
    with capsys.disabled():
        print(f"\nparallel runners: {report}")

    # The job took part: at least one of its runs held the lock and closed calls.
    assert job_closed_calls(by_job), report
    # Every call transitioned exactly once, and to the right status.
    transitions = Counter(conn.execute(
        f"SELECT call_id FROM {audit} WHERE call_id = ANY(%s)", [ids]).fetchall())
    assert len(transitions) == len(ids) and set(transitions.values()) == {1}, report
    closed, pushed = assert_all_or_nothing(conn, ids)
    assert closed == len(ids)
    assert pushed == n_ringing + 2 * (len(ids) - n_ringing)
    # Reported counts add up, per run and in total.
    assert runner_closed + job_closed == len(ids), report
    per_run = dict(conn.execute(
        "SELECT correlation_id, count(DISTINCT reference_id) FROM messenger.realtime_outbox"
        " WHERE reference_id = ANY(%s) GROUP BY correlation_id", [ids]).fetchall())
    for r in results:
        assert per_run.get(r["run_id"], 0) == r["missed_count"] + r["failed_count"]
    for run_id, _result, missed, failed, _skipped, _poisoned in by_job:
        assert per_run.get(run_id, 0) == missed + failed
    assert set(per_run) <= {r["run_id"] for r in results} | {r[0] for r in by_job}
    # Nothing was skipped for a row lock or poisoned; busy runs changed nothing.
    assert all(r["skipped_locked_count"] == 0 and r["poisoned_count"] == 0 for r in results)
    assert all(r["missed_count"] == r["failed_count"] == 0
               for r in results if not r["lock_acquired"])
    assert conn.execute(
        "SELECT count(*) FROM (SELECT FROM messenger.realtime_outbox WHERE reference_id = ANY(%s)"
        " GROUP BY kind, reference_id, target_id HAVING count(*) > 1) d", [ids]).fetchone()[0] == 0
