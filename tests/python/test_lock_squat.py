"""Nobody can squat the single-runner lock.

A session that takes the reaper's key with pg_advisory_lock (session level) keeps it across
transactions: idle, its xact_start is NULL; running short transactions, xact_start is always
young. The lock warden (messenger._end_stale_call_reaper_lock, every second from the pg_cron
job messenger-call-reaper-warden) records when it first saw each holder
(messenger.call_reaper_lock_holders) and ends one that is not a running cycle once it has held
the lock for lock_ttl. Here, with the real warden and the real scheduled reaper (15 s), a due
call is closed within lock_ttl + 2 polling intervals of the squat (lock_ttl lowered to 5 s).
A holder the warden may not signal (a superuser's, the warden's role not one) is said once and
left to the DBA: call_reaper_status and the exporter show it (the alert is CallReaperLockHeld,
tested by monitoring/alerts_test.yml). The check writes no WAL while the lock is free or the
same holder is seen again.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from call_reaper_exporter import ReaperCollector
from conftest import set_reaper_job_active
from exporter_support import collect_once, sample
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import dict_row
from reaper_facts import LOCK_KEY_SQL, WARDEN_JOB_NAME
from reaper_support import backend_pid, call_rows, ringing, takeovers, wait_for

TTL_S = 5
P = "messenger_call_reaper_"


def settings(conn: psycopg.Connection) -> tuple[timedelta, timedelta]:
    return conn.execute(
        "SELECT lock_ttl, polling_interval FROM messenger.call_reaper_settings").fetchone()


@pytest.fixture
def lock_ttl(conn) -> Iterator[float]:
    old, _ = settings(conn)
    conn.execute("UPDATE messenger.call_reaper_settings SET lock_ttl = %s", [timedelta(seconds=TTL_S)])
    yield TTL_S
    conn.execute("UPDATE messenger.call_reaper_settings SET lock_ttl = %s", [old])


@pytest.fixture
def reaper_running(conn) -> Iterator[None]:
    """The scheduled reaper runs (resumed if a test before paused it), in steady state: on
    pg_cron 1.4 a job resumed mid-minute next runs at the top of the minute, up to 60 s away,
    which the bound below does not allow for (as in test_slo.py, wait for its first tick)."""
    was_paused = set_reaper_job_active(conn, True) is False
    resumed = conn.execute("SELECT clock_timestamp()").fetchone()[0]
    # last_run_at: an idle tick leaves no ledger row, it is counted apart.
    wait_for(lambda: conn.execute("SELECT last_run_at > %s FROM messenger.call_reaper_metrics()",
                                  [resumed]).fetchone()[0],
             75, "the scheduled reaper's first tick after resuming")
    yield
    if was_paused:
        set_reaper_job_active(conn, False)


@pytest.fixture
def stranger(dsn) -> Iterator[Callable[[], psycopg.Connection]]:
    """Connections of a fresh LOGIN role with no right at all (it may connect and call PUBLIC's
    functions, such as pg_advisory_lock, nothing more); dropped after the test."""
    role = f"lock_squatter_{secrets.token_hex(4)}"
    password = secrets.token_urlsafe(18)
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
            sql.Identifier(role), sql.Literal(password)))
    params = conninfo_to_dict(dsn) if dsn else {}
    params.update(user=role, password=password)
    opened: list[psycopg.Connection] = []

    def connect() -> psycopg.Connection:
        opened.append(psycopg.connect(make_conninfo("", **params), autocommit=True))
        return opened[-1]

    yield connect
    for c in opened:
        c.close()
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE usename = %s",
                      [role])
        admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


@pytest.fixture
def warden_stopped(conn) -> Iterator[None]:
    """No lock warden runs (as with scheduler=none): its job is deactivated and its CALL in
    flight ended; both given back afterwards."""
    jobid = conn.execute("SELECT jobid FROM cron.job WHERE jobname = %s", [WARDEN_JOB_NAME]).fetchone()[0]
    conn.execute("SELECT cron.alter_job(%s, active => false)", [jobid])
    try:
        conn.execute("SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity"
                     " WHERE query LIKE 'CALL messenger.run_call_reaper_warden(%%'")
        yield
    finally:
        conn.execute("SELECT cron.alter_job(%s, active => true)", [jobid])


def lock_key(conn: psycopg.Connection) -> int:
    return conn.execute(f"SELECT {LOCK_KEY_SQL}").fetchone()[0]


def alive(conn: psycopg.Connection, pid: int) -> bool:
    return conn.execute("SELECT EXISTS (SELECT FROM pg_stat_activity WHERE pid = %s)", [pid]).fetchone()[0]


def status(conn: psycopg.Connection) -> dict:
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute("SELECT * FROM messenger.call_reaper_status()").fetchone()


def squat_and_wait_for_the_call(conn, calls, squatter, keep_busy: bool) -> None:
    """The squatter takes the lock at session level; a due call is then closed by the scheduled
    reaper within lock_ttl + 2 polling intervals, because the warden ended the squatter."""
    ttl, interval = settings(conn)
    slo = ttl.total_seconds() + 2 * interval.total_seconds()
    squatter.execute("SELECT pg_advisory_lock(%s)", [lock_key(conn)])
    squatted_at = time.monotonic()
    pid = backend_pid(squatter)
    role = squatter.execute("SELECT current_user").fetchone()[0]
    (call,) = calls.add([ringing(datetime.now(UTC) - timedelta(minutes=5))])
    stop = threading.Event()

    def short_transactions() -> None:
        # One short transaction a second: its xact_start is never more than a second old.
        while not stop.is_set():
            try:
                squatter.execute("SELECT 1")
            except psycopg.Error:
                return
            stop.wait(1)

    busy = threading.Thread(target=short_transactions) if keep_busy else None
    if busy:
        busy.start()
    try:
        def left() -> float:
            return slo - (time.monotonic() - squatted_at)

        wait_for(lambda: not alive(conn, pid), left(), "the warden to end the squatter", interval=0.2)
        ended_after = time.monotonic() - squatted_at
        wait_for(lambda: call_rows(conn, [call["call_id"]])[call["call_id"]]["status"] == "Missed",
                 left(), "the scheduled reaper to close the due call", interval=0.2)
        closed_after = time.monotonic() - squatted_at
        print(f"\nsquatter ({'busy' if keep_busy else 'idle'}) ended {ended_after:.1f} s after it took"
              f" the lock, the due call closed after {closed_after:.1f} s (bound {slo:g} s)")
    finally:
        stop.set()
        if busy:
            busy.join(5)
    wait_for(lambda: takeovers(conn, pid), 5, "the warden to record the takeover")
    ((action, reason, taken_role, held_for, signalled),) = takeovers(conn, pid)
    assert (action, reason, taken_role, signalled) == ("terminated", "lock_ttl", role, True)
    assert held_for >= ttl.total_seconds(), "ended once it had held the lock lock_ttl, not before"
    # The record of a holder goes with it.
    wait_for(lambda: not conn.execute(
        "SELECT EXISTS (SELECT FROM messenger.call_reaper_lock_holders WHERE pid = %s)", [pid]
    ).fetchone()[0], 5, "the warden to forget the ended holder")


def test_an_idle_session_level_squatter_is_ended(conn, calls, stranger, lock_ttl,
                                                 reaper_running, warden_running):
    squat_and_wait_for_the_call(conn, calls, stranger(), keep_busy=False)


def test_a_squatter_running_short_transactions_is_ended(conn, calls, stranger, lock_ttl,
                                                        reaper_running, warden_running):
    squat_and_wait_for_the_call(conn, calls, stranger(), keep_busy=True)


@pytest.fixture
def deputy(conn) -> Iterator[str]:
    """A role that may run the warden's check and signal other roles' backends
    (pg_signal_backend), but is no superuser: a managed service's deployer."""
    role = f"warden_deputy_{secrets.token_hex(4)}"
    ident = sql.Identifier(role)
    for stmt in ("CREATE ROLE {} NOLOGIN", "GRANT pg_signal_backend TO {}",
                 "GRANT USAGE ON SCHEMA messenger TO {}",
                 "GRANT SELECT ON messenger.call_reaper_settings TO {}",
                 "GRANT INSERT ON messenger.call_reaper_lock_takeovers TO {}",
                 "GRANT SELECT, INSERT, UPDATE, DELETE ON messenger.call_reaper_lock_holders TO {}",
                 "GRANT EXECUTE ON FUNCTION messenger._end_stale_call_reaper_lock() TO {}",
                 "GRANT EXECUTE ON FUNCTION messenger.call_reaper_lock_holder() TO {}"):
        conn.execute(sql.SQL(stmt).format(ident))
    yield role
    conn.execute(sql.SQL("DROP OWNED BY {}").format(ident))
    conn.execute(sql.SQL("DROP ROLE {}").format(ident))


def deputy_check(conn: psycopg.Connection, role: str) -> int:
    conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))
    try:
        return conn.execute("SELECT messenger._end_stale_call_reaper_lock()").fetchone()[0]
    finally:
        conn.execute("RESET ROLE")


def test_a_superuser_holder_the_warden_may_not_end_is_shown(conn, make_conn, monitor_dsn, deputy,
                                                            lock_ttl, warden_stopped):
    holder = make_conn()
    holder.execute("SELECT pg_advisory_lock(%s)", [lock_key(conn)])
    pid = backend_pid(holder)
    me = conn.execute("SELECT current_user").fetchone()[0]

    # No warden has seen it: status still names it and since when (an idle session took the
    # lock before its last state change).
    before = status(conn)
    assert (before["lock_holder_pid"], before["lock_holder_role"], before["lock_holder_state"],
            before["lock_holder_is_cycle"], before["lock_warden_can_end"]) == (pid, me, "idle", False, None)
    assert before["lock_held_since"] == conn.execute(
        "SELECT state_change FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone()[0]

    # A warden that is no superuser sees it: recorded with the same held_since, not endable.
    assert deputy_check(conn, deputy) == 0
    seen = status(conn)
    assert (seen["lock_held_since"], seen["lock_warden_can_end"]) == (before["lock_held_since"], False)

    collector = ReaperCollector(monitor_dsn)
    try:
        first = collect_once(collector)
        time.sleep(1.1)
        second = collect_once(collector)
    finally:
        collector.close()
    assert 0 < sample(first, P + "lock_held_seconds") < sample(second, P + "lock_held_seconds")
    assert sample(second, P + "lock_warden_can_end") == 0
    assert sample(second, P + "lock_ttl_seconds") == TTL_S

    # Past lock_ttl: the deputy tries, may not, and says so once.
    wait_for(lambda: conn.execute(
        "SELECT clock_timestamp() - lock_held_since > (SELECT lock_ttl FROM messenger.call_reaper_settings)"
        "  FROM messenger.call_reaper_status()").fetchone()[0], 3 * TTL_S, "the hold to pass lock_ttl")
    assert deputy_check(conn, deputy) == 1
    assert deputy_check(conn, deputy) == 0, "a holder it may not end is reported once"
    assert alive(conn, pid) and holder.execute("SELECT 1").fetchone() == (1,)
    ((action, reason, role, held_for, signalled),) = takeovers(conn, pid)
    assert (action, reason, role, signalled) == ("terminated", "lock_ttl", me, False)
    assert held_for > TTL_S
    collector = ReaperCollector(monitor_dsn)
    try:
        late = collect_once(collector)
    finally:
        collector.close()
    # What CallReaperLockHeld compares.
    assert sample(late, P + "lock_held_seconds") > sample(late, P + "lock_ttl_seconds")
    assert sample(late, P + "lock_warden_can_end") == 0
    holder.execute("SELECT pg_advisory_unlock_all()")
    conn.execute("DELETE FROM messenger.call_reaper_lock_takeovers WHERE pid = %s", [pid])


def check_wal(conn: psycopg.Connection) -> tuple[int, int]:
    """(WAL records, WAL bytes) one warden check wrote (EXPLAIN's count covers the routines the
    statement runs; the COMMIT's own record comes after it)."""
    (plan,) = conn.execute("EXPLAIN (ANALYZE, WAL, FORMAT JSON)"
                           " SELECT messenger._end_stale_call_reaper_lock()").fetchone()[0]
    return plan["Plan"]["WAL Records"], plan["Plan"]["WAL Bytes"]


def test_the_check_writes_no_wal_unless_a_holder_comes_or_goes(conn, make_conn, reaper_paused,
                                                                warden_stopped):
    check_wal(conn)  # forgets any holder left behind
    assert [check_wal(conn) for _ in range(3)] == [(0, 0)] * 3, "the lock free: nothing written"

    holder = make_conn()
    holder.execute("SELECT pg_advisory_lock(%s)", [lock_key(conn)])
    assert check_wal(conn)[0] > 0, "a new holder is recorded"
    assert [check_wal(conn) for _ in range(3)] == [(0, 0)] * 3, "the same holder again: nothing written"

    holder.execute("SELECT pg_advisory_unlock_all()")
    assert check_wal(conn)[0] > 0, "a holder gone is forgotten"
    assert [check_wal(conn) for _ in range(3)] == [(0, 0)] * 3, "free again: nothing written"
