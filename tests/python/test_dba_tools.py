"""DBA tools that need committed data or COMMITs of their own: the drain procedure, the sql/
scripts, the tick procedure's pause check, and what messenger.call_reaper_status() says of a
job CALL in flight and the lock it holds. The scheduled job is paused (reaper_paused) so it
never takes the lock these tests expect or closes their calls behind their back."""

from __future__ import annotations

import itertools
import subprocess
import threading
import time
import uuid
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.rows import dict_row
from reaper_facts import JOB_NAME, JOB_ROLE

ROOT = Path(__file__).resolve().parents[2]
FUTURE = "2100-03-01 00:00:00+00"  # the job never sees calls this far ahead


def _insert_calls(conn, n_ringing: int, n_answered: int, started: str) -> list[uuid.UUID]:
    ids = [uuid.uuid4() for _ in range(n_ringing + n_answered)]
    with conn.cursor() as cur:
        for i, call_id in enumerate(ids):
            answered = i >= n_ringing
            cur.execute(
                "INSERT INTO messenger.call_sessions (call_id, caller_user_id, callee_user_id, media_type,"
                " status, started_at, answered_at, updated_at)"
                " VALUES (%s, gen_random_uuid(), gen_random_uuid(), 'Audio', %s, %s::timestamptz,"
                "         CASE WHEN %s THEN %s::timestamptz END, %s::timestamptz)",
                (call_id, "Answered" if answered else "Ringing", started, answered, started, started),
            )
    return ids


@pytest.fixture
def calls(conn):
    """Call ids a test inserts; they and their outbox rows are deleted afterwards."""
    ids: list[uuid.UUID] = []
    yield ids
    conn.execute("DELETE FROM messenger.realtime_outbox WHERE reference_id = ANY(%s)", (ids,))
    conn.execute("DELETE FROM messenger.call_reaper_quarantine WHERE call_id = ANY(%s)", (ids,))
    conn.execute("DELETE FROM messenger.call_sessions WHERE call_id = ANY(%s)", (ids,))


def test_drain_runs_committed_cycles_until_nothing_is_left(conn, reaper_paused, calls):
    calls += _insert_calls(conn, 25, 5, FUTURE)
    cycles, missed, failed = conn.execute(
        "CALL messenger.drain_call_timeouts(batch_size => 10, as_of => %s::timestamptz + interval '1 day')",
        (FUTURE,),
    ).fetchone()
    # 10+5, 10, 5, then one cycle that finds nothing.
    assert (cycles, missed, failed) == (4, 25, 5)
    assert conn.execute(
        "SELECT count(*) FROM messenger.call_sessions WHERE call_id = ANY(%s) AND status IN ('Ringing', 'Answered')",
        (calls,),
    ).fetchone()[0] == 0
    # Each cycle committed on its own: distinct run ids in the outbox and the ledger.
    assert conn.execute(
        "SELECT count(DISTINCT correlation_id) FROM messenger.realtime_outbox WHERE reference_id = ANY(%s)", (calls,)
    ).fetchone()[0] == 3


def test_drain_goes_on_past_cycles_that_meet_only_poison(conn, reaper_paused, calls):
    """30 poison calls ring longest, then 20 healthy ones, batch 10: the first three cycles
    close nothing (they quarantine poison), the drain goes on, closes the healthy calls and
    stops at the first cycle that finds nothing it can act on."""
    poison = _insert_calls(conn, 30, 0, "2100-02-27 00:00:00+00")
    healthy = _insert_calls(conn, 20, 0, FUTURE)
    calls += poison + healthy
    conn.execute("""
        CREATE FUNCTION public.drain_poison() RETURNS trigger LANGUAGE plpgsql
        SET search_path = pg_catalog AS $$
        BEGIN
            IF NEW.started_at < '2100-02-28' AND NEW.status <> OLD.status THEN
                RAISE EXCEPTION 'poison';
            END IF;
            RETURN NEW;
        END $$""")
    conn.execute("CREATE TRIGGER drain_poison BEFORE UPDATE ON messenger.call_sessions"
                 " FOR EACH ROW EXECUTE FUNCTION public.drain_poison()")
    try:
        cycles, missed, failed = conn.execute(
            "CALL messenger.drain_call_timeouts(batch_size => 10, as_of => %s::timestamptz + interval '1 day')",
            (FUTURE,),
        ).fetchone()
    finally:
        conn.execute("DROP TRIGGER drain_poison ON messenger.call_sessions")
        conn.execute("DROP FUNCTION public.drain_poison()")
    # 3 cycles of poison, 2 of healthy calls, one that finds nothing.
    assert (cycles, missed, failed) == (6, 20, 0)
    assert conn.execute(
        "SELECT count(*) FROM messenger.call_sessions WHERE call_id = ANY(%s) AND status = 'Missed'", (healthy,)
    ).fetchone()[0] == 20
    assert conn.execute(
        "SELECT count(*) FROM messenger.call_reaper_quarantine WHERE call_id = ANY(%s)", (poison,)
    ).fetchone()[0] == 30


def test_drain_stops_after_max_cycles(conn, reaper_paused, calls):
    calls += _insert_calls(conn, 25, 0, FUTURE)
    cycles, missed, _ = conn.execute(
        "CALL messenger.drain_call_timeouts(max_cycles => 2, batch_size => 10,"
        " as_of => %s::timestamptz + interval '1 day')",
        (FUTURE,),
    ).fetchone()
    assert (cycles, missed) == (2, 20)
    assert conn.execute(
        "SELECT count(*) FROM messenger.call_sessions WHERE call_id = ANY(%s) AND status = 'Ringing'", (calls,)
    ).fetchone()[0] == 5


def test_a_polite_drain_sleeps_between_its_cycles(conn, reaper_paused, calls):
    """duty_cycle => 0.2: after each cycle that leaves work the drain sleeps four times as long
    as that cycle ran (cycle and COMMIT), so in the run ledger the gap from a cycle's end to the
    next one's start is at least four times that cycle's own span. Only ratios of the server's
    own clock: no time is assumed."""
    calls += _insert_calls(conn, 30, 0, FUTURE)
    since = conn.execute("SELECT clock_timestamp()").fetchone()[0]
    cycles, missed, _ = conn.execute(
        "CALL messenger.drain_call_timeouts(batch_size => 10, as_of => %s::timestamptz + interval '1 day',"
        " duty_cycle => 0.2)", (FUTURE,)).fetchone()
    assert (cycles, missed) == (4, 30)
    runs = conn.execute("SELECT started_at, finished_at, missed_count FROM messenger.call_reaper_runs"
                        " WHERE started_at >= %s ORDER BY started_at", (since,)).fetchall()
    assert [r[2] for r in runs] == [10, 10, 10, 0]
    for (s0, f0, _), (s1, _, _) in itertools.pairwise(runs):
        assert s1 - f0 >= 4 * (f0 - s0), "the drain did not sleep (1 - d) / d of the cycle before"


@pytest.mark.parametrize("duty_cycle", ["0", "-0.5", "1.5", "NaN", None])
def test_drain_refuses_a_bad_duty_cycle_and_runs_nothing(conn, reaper_paused, calls, duty_cycle):
    calls += _insert_calls(conn, 5, 0, FUTURE)
    since = conn.execute("SELECT clock_timestamp()").fetchone()[0]
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        conn.execute("CALL messenger.drain_call_timeouts(as_of => %s::timestamptz + interval '1 day',"
                     " duty_cycle => %s::real)", (FUTURE, duty_cycle))
    assert conn.execute("SELECT count(*) FROM messenger.call_reaper_runs WHERE started_at >= %s",
                        (since,)).fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM messenger.call_sessions WHERE call_id = ANY(%s) AND status = 'Ringing'",
                        (calls,)).fetchone()[0] == 5


def test_drain_refuses_a_bad_max_cycles(conn, reaper_paused):
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        conn.execute("CALL messenger.drain_call_timeouts(max_cycles => 0)")


def _psql(script: str, *args: str) -> str:
    result = subprocess.run(
        ["psql", "-X", "-q", "-A", "-F", "|", "-t", "-v", "ON_ERROR_STOP=1", *args, "-f", str(ROOT / "sql" / script)],
        capture_output=True, text=True, check=True,
    )
    return result.stdout


def _backlog() -> dict[str, tuple[int, int]]:
    """sql/backlog.sql's (overdue, quarantined) per phase; a phase with nothing overdue has no row."""
    rows = {line.split("|")[0]: line.split("|")[1:3] for line in _psql("backlog.sql").splitlines()}
    return {phase: tuple(int(rows[phase][i]) if phase in rows else 0 for i in (0, 1))
            for phase in ("ring_timeout", "stale_answered")}


def test_backlog_script_counts_overdue_calls_per_phase(conn, reaper_paused, calls):
    # Other tests' calls may be overdue too: count against a baseline (the job is paused, so
    # nothing closes them meanwhile).
    before = _backlog()
    calls += _insert_calls(conn, 2, 0, "2000-01-01 00:00:00+00")
    calls += _insert_calls(conn, 0, 1, "2000-01-01 00:00:00+00")
    # Not due yet: a call ringing and one answered just now.
    now = conn.execute("SELECT now()::text").fetchone()[0]
    calls += _insert_calls(conn, 1, 1, now)
    conn.execute(
        "INSERT INTO messenger.call_reaper_quarantine (call_id, phase, attempts, first_failed_at, last_failed_at,"
        " next_attempt_at, last_sqlstate, last_message, last_run_id)"
        " VALUES (%s, 'ring_timeout', 1, now(), now(), now() + interval '1 hour', 'P0001', 'test', gen_random_uuid())",
        (calls[0],),
    )
    after = _backlog()
    assert after["ring_timeout"] == (before["ring_timeout"][0] + 2, before["ring_timeout"][1] + 1)
    assert after["stale_answered"] == (before["stale_answered"][0] + 1, before["stale_answered"][1])


def test_quarantine_scripts_list_and_release_one_call(conn, reaper_paused, calls):
    calls += _insert_calls(conn, 2, 0, FUTURE)
    for call_id in calls:
        conn.execute(
            "INSERT INTO messenger.call_reaper_quarantine (call_id, phase, attempts, first_failed_at, last_failed_at,"
            " next_attempt_at, last_sqlstate, last_message, last_run_id)"
            " VALUES (%s, 'ring_timeout', 3, now(), now(), now() + interval '1 hour', '23514', 'check', gen_random_uuid())",
            (call_id,),
        )
    listed = _psql("quarantined_calls.sql")
    assert str(calls[0]) in listed and str(calls[1]) in listed
    released = _psql("release_quarantined_call.sql", "-v", f"call_id={calls[0]}")
    assert str(calls[0]) in released
    left = {r[0] for r in conn.execute(
        "SELECT call_id FROM messenger.call_reaper_quarantine WHERE call_id = ANY(%s)", (calls,)
    ).fetchall()}
    assert left == {calls[1]}


STATUS_HOLD_KEY = 7_700_001  # an advisory lock of this test's own, not the reaper's


def _status(conn) -> dict:
    # By name: call_reaper_status() may gain columns.
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute("SELECT * FROM messenger.call_reaper_status()").fetchone()


def test_status_shows_a_job_call_in_flight_its_lock_and_its_run(conn, make_conn, login, calls,
                                                                  reaper_paused):
    """A CALL of the job's procedure, logged in as the job role, is held inside its cycle (a
    product trigger waits for a lock this test holds): status counts it in flight and names
    its backend as the lock holder since its transaction began; once it finished, nothing is
    in flight, nobody holds the lock, and the last run is its run."""
    calls += _insert_calls(conn, 1, 0, "2000-01-01 00:00:00+00")
    held = calls[0]
    assert (_status(conn)["job_calls_in_flight"], _status(conn)["lock_holder_pid"]) == (0, None)
    conn.execute(sql.SQL("""
        CREATE FUNCTION public.reaper_status_hold() RETURNS trigger LANGUAGE plpgsql
        SET search_path = pg_catalog AS $$
        BEGIN
            IF NEW.call_id = {held} THEN
                PERFORM pg_advisory_xact_lock({key});
            END IF;
            RETURN NEW;
        END $$""").format(held=sql.Literal(str(held)), key=sql.Literal(STATUS_HOLD_KEY)))
    conn.execute("CREATE TRIGGER reaper_status_hold BEFORE UPDATE ON messenger.call_sessions"
                 " FOR EACH ROW EXECUTE FUNCTION public.reaper_status_hold()")
    holder = make_conn()
    holder.execute("SELECT pg_advisory_lock(%s)", [STATUS_HOLD_KEY])
    # The job role's CALL runs cycles only while the reaper is not paused; pg_cron must not
    # launch the real job meanwhile.
    jobid = conn.execute("SELECT jobid FROM cron.job WHERE jobname = %s", [JOB_NAME]).fetchone()[0]
    conn.execute("SELECT cron.alter_job(%s, active => false)", [jobid])
    errors = []
    try:
        conn.execute("SELECT messenger.resume_call_reaper()")
        with login(JOB_ROLE) as job_conn:
            job_pid = job_conn.info.backend_pid

            def run():
                try:
                    job_conn.execute("CALL messenger.run_call_reaper_ticks()")
                except Exception as exc:  # noqa: BLE001 -- reported by the test thread
                    errors.append(exc)

            thread = threading.Thread(target=run)
            thread.start()
            try:
                deadline = time.monotonic() + 30
                while conn.execute(
                        "SELECT wait_event FROM pg_stat_activity WHERE pid = %s",
                        [job_pid]).fetchone()[0] != "advisory":
                    assert time.monotonic() < deadline, "the job's CALL never reached the held call"
                    assert not errors, errors
                    time.sleep(0.05)
                xact_start = conn.execute("SELECT xact_start FROM pg_stat_activity WHERE pid = %s",
                                          [job_pid]).fetchone()[0]
                status = _status(conn)
                assert status["job_calls_in_flight"] == 1
                assert status["lock_holder_pid"] == job_pid
                assert status["lock_held_since"] == xact_start
            finally:
                # Paused again before the cycle goes on: the CALL then returns at its next nap.
                conn.execute("SELECT messenger.pause_call_reaper()")
                holder.execute("SELECT pg_advisory_unlock(%s)", [STATUS_HOLD_KEY])
                thread.join(60)
            assert not thread.is_alive() and not errors, errors
    finally:
        conn.execute("SELECT cron.alter_job(%s, active => true)", [jobid])
        conn.execute("DROP TRIGGER reaper_status_hold ON messenger.call_sessions")
        conn.execute("DROP FUNCTION public.reaper_status_hold()")
    run_id = conn.execute("SELECT correlation_id FROM messenger.realtime_outbox WHERE reference_id = %s",
                          [held]).fetchone()[0]
    started_at, result = conn.execute(
        "SELECT started_at, result FROM messenger.call_reaper_runs WHERE run_id = %s", [run_id]).fetchone()
    status = _status(conn)
    assert (status["job_calls_in_flight"], status["lock_holder_pid"], status["lock_held_since"]) == \
        (0, None, None)
    assert (status["last_run_at"], status["last_result"]) == (started_at, result) == \
        (started_at, "completed")
