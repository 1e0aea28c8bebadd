"""Catch-up in the tick procedure: after a gap (failover, restart, resumed pause, long cycle)
one tick runs cycles until one closes less than a full batch, each committed on its own, so a
gap costs one tick instead of one tick per batch_size calls.

Driven by time as a parameter: CALL messenger.run_call_reaper_ticks(as_of => ...) runs one tick
at that as_of (it runs while the job is paused, like a cycle by hand), as the job role itself, so
the grants it needs are proven too. Calls are dated 2100 so the scheduled job never sees them;
the job is paused so it never holds the lock these tests count on. batch_size is 10 for the
test, so a backlog of a few batches is a few dozen rows."""

from __future__ import annotations

import uuid

import pytest
import reaper_support
from reaper_facts import LOCK_KEY_SQL, OPERATOR_ROLE

BATCH = 10
FUTURE = reaper_support.FUTURE
AS_OF = FUTURE + reaper_support.STALE * 2  # past both windows of every call below


@pytest.fixture
def small_batch(conn):
    old = conn.execute("SELECT batch_size FROM messenger.call_reaper_settings").fetchone()[0]
    conn.execute("UPDATE messenger.call_reaper_settings SET batch_size = %s", (BATCH,))
    yield
    conn.execute("UPDATE messenger.call_reaper_settings SET batch_size = %s", (old,))


def _backlog(calls: reaper_support.Calls, ringing: int, answered: int) -> list[uuid.UUID]:
    calls.add(reaper_support.ringing(FUTURE + i * reaper_support.US) for i in range(ringing))
    calls.add(reaper_support.answered(FUTURE + i * reaper_support.US) for i in range(answered))
    return calls.ids


def _tick_as_operator(make_conn, *, statement_timeout: str | None = None) -> list[tuple]:
    """One tick at AS_OF as the operator role (SET ROLE: its EXECUTE and column grants apply;
    the job role itself may not pass as_of, test_job_credential.py).

    Returns the ledger rows (result, missed, failed) of the cycles that tick ran, in order."""
    job = make_conn()
    since = job.execute("SELECT clock_timestamp()").fetchone()[0]
    job.execute(f"SET ROLE {OPERATOR_ROLE}")
    if statement_timeout is not None:
        job.execute("SELECT set_config('statement_timeout', %s, false)", (statement_timeout,))
    job.execute("CALL messenger.run_call_reaper_ticks(as_of => %s)", (AS_OF,))
    job.execute("RESET ROLE")
    return job.execute(
        "SELECT result, missed_count, failed_count FROM messenger.call_reaper_runs"
        " WHERE as_of = %s AND started_at >= %s ORDER BY started_at", (AS_OF, since)).fetchall()


def _active(conn, ids) -> int:
    return conn.execute(
        "SELECT count(*) FROM messenger.call_sessions"
        " WHERE call_id = ANY(%s) AND status IN ('Ringing', 'Answered')", (ids,)).fetchone()[0]


def test_one_tick_catches_up_a_backlog_of_several_batches(conn, make_conn, reaper_paused, small_batch, calls):
    ids = _backlog(calls, ringing=25, answered=23)
    runs = _tick_as_operator(make_conn)
    # Full, full, then 5 + 3: less than a full batch in both phases ends the catch-up.
    assert runs == [("completed", 10, 10), ("completed", 10, 10), ("completed", 5, 3)]
    assert _active(conn, ids) == 0
    assert reaper_support.assert_all_or_nothing(conn, ids) == (48, 25 + 2 * 23)
    # Each cycle committed on its own: three run ids in the outbox.
    assert conn.execute(
        "SELECT count(DISTINCT correlation_id) FROM messenger.realtime_outbox WHERE reference_id = ANY(%s)",
        (ids,)).fetchone()[0] == 3


@pytest.mark.parametrize(("ringing", "expected"), [
    (BATCH - 1, [("completed", BATCH - 1, 0)]),
    # A full batch cannot tell "exactly batch_size were due" from "more are due": one more look.
    (BATCH, [("completed", BATCH, 0), ("completed", 0, 0)]),
])
def test_a_tick_that_is_not_behind_runs_no_extra_cycle(conn, make_conn, reaper_paused, small_batch, calls,
                                                       ringing, expected):
    ids = _backlog(calls, ringing=ringing, answered=0)
    assert _tick_as_operator(make_conn) == expected
    assert _active(conn, ids) == 0


def test_catch_up_stops_when_the_calls_budget_is_nearly_spent(conn, make_conn, reaper_paused, small_batch, calls):
    # statement_timeout below the 5 s reserve a catch-up cycle needs: the tick's own cycle runs
    # (it always does), no catch-up; the next tick takes the rest.
    ids = _backlog(calls, ringing=25, answered=0)
    assert _tick_as_operator(make_conn, statement_timeout="4s") == [("completed", 10, 0)]
    assert _active(conn, ids) == 15
    _tick_as_operator(make_conn)
    assert _active(conn, ids) == 0
    assert reaper_support.assert_all_or_nothing(conn, ids) == (25, 25)


def test_a_skipped_cycle_ends_the_catch_up(conn, make_conn, reaper_paused, small_batch, calls):
    # Another runner holds the single-runner lock: it is doing the work; the tick does not spin.
    ids = _backlog(calls, ringing=25, answered=0)
    holder = make_conn(autocommit=False)
    holder.execute(f"SELECT pg_advisory_xact_lock({LOCK_KEY_SQL})")
    try:
        runs = _tick_as_operator(make_conn)
    finally:
        holder.rollback()
    assert runs == [("skipped", 0, 0)]
    assert _active(conn, ids) == 25

