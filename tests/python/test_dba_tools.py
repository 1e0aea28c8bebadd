"""DBA tools that need committed data or COMMITs of their own: the drain procedure, the sql/
scripts, and the tick procedure's pause check. The scheduled job is paused (reaper_paused) so
it never takes the lock these tests expect or closes their calls behind their back."""

from __future__ import annotations

import subprocess
import time
import uuid
from pathlib import Path

import psycopg
import pytest

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


def test_drain_refuses_a_bad_max_cycles(conn, reaper_paused):
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        conn.execute("CALL messenger.drain_call_timeouts(max_cycles => 0)")


def test_tick_procedure_of_a_paused_job_returns_without_a_cycle(conn, reaper_paused):
    before = conn.execute("SELECT count(*) FROM messenger.call_reaper_runs").fetchone()[0]
    started = time.monotonic()
    conn.execute("CALL messenger.run_call_reaper_ticks()")
    assert time.monotonic() - started < 2
    assert conn.execute("SELECT count(*) FROM messenger.call_reaper_runs").fetchone()[0] == before


def _psql(script: str, *args: str) -> str:
    result = subprocess.run(
        ["psql", "-X", "-q", "-A", "-F", "|", "-t", "-v", "ON_ERROR_STOP=1", *args, "-f", str(ROOT / "sql" / script)],
        capture_output=True, text=True, check=True,
    )
    return result.stdout


def test_backlog_script_counts_overdue_calls_per_phase(conn, reaper_paused, calls):
    calls += _insert_calls(conn, 2, 0, "2000-01-01 00:00:00+00")
    calls += _insert_calls(conn, 0, 1, "2000-01-01 00:00:00+00")
    conn.execute(
        "INSERT INTO messenger.call_reaper_quarantine (call_id, phase, attempts, first_failed_at, last_failed_at,"
        " next_attempt_at, last_sqlstate, last_message, last_run_id)"
        " VALUES (%s, 'ring_timeout', 1, now(), now(), now() + interval '1 hour', 'P0001', 'test', gen_random_uuid())",
        (calls[0],),
    )
    rows = {line.split("|")[0]: line.split("|")[1:3] for line in _psql("backlog.sql").splitlines()}
    # The test database may hold other overdue calls: ours are at least counted.
    assert int(rows["ring_timeout"][0]) >= 2 and int(rows["ring_timeout"][1]) >= 1
    assert int(rows["stale_answered"][0]) >= 1


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
