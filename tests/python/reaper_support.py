"""Helpers shared by the multi-connection reaper tests.

Plain functions, not fixtures: the fixtures that use them live in conftest.py.
Rows are made with far-future timestamps (year 2100) and the matching as_of, so the
scheduled job, which reaps at the real now(), never sees them; every helper that makes
rows remembers their ids so the test can delete exactly what it made.
"""

from __future__ import annotations

import os
import pwd
import subprocess
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from psycopg import sql
from psycopg.rows import dict_row
from reaper_facts import JOB_NAME, LOCK_KEY_SQL, WARDEN_JOB_NAME

FUTURE = datetime(2100, 1, 1, tzinfo=UTC)
RING = timedelta(seconds=45)
STALE = timedelta(hours=2)
US = timedelta(microseconds=1)
RESTART_OPT_IN = "CALL_REAPER_TEST_RESTARTABLE_CLUSTER"

# Every table the reaper reads or writes, for "nothing changed" checksums.
STATE_TABLES = (
    "messenger.call_sessions",
    "messenger.realtime_outbox",
    "messenger.call_reaper_settings",
    "messenger.call_reaper_runs",
    "messenger.call_reaper_counters",
    "messenger.call_reaper_quarantine",
    "messenger.call_reaper_claim_floor",
)

CALL_COLUMNS = (
    "call_id", "caller_user_id", "callee_user_id", "media_type", "status", "end_reason",
    "started_at", "answered_at", "ended_at", "updated_at", "duration_seconds",
)


def ringing(started_at: datetime, **kw: object) -> dict:
    """A Ringing call (never answered)."""
    return {"status": "Ringing", "started_at": started_at, "updated_at": started_at, **kw}


def answered(updated_at: datetime, **kw: object) -> dict:
    """An Answered call whose last signalling progress was at updated_at."""
    started = kw.pop("started_at", updated_at - timedelta(minutes=1))
    return {"status": "Answered", "started_at": started, "answered_at": started,
            "updated_at": updated_at, **kw}


@dataclass
class Calls:
    """Inserts calls (committed) and deletes everything tied to them afterwards."""

    conn: psycopg.Connection
    ids: list[uuid.UUID] = field(default_factory=list)

    def add(self, specs: Iterable[dict]) -> list[dict]:
        rows = []
        for spec in specs:
            row = {
                "call_id": uuid.uuid4(), "caller_user_id": uuid.uuid4(),
                "callee_user_id": uuid.uuid4(), "media_type": "Audio", "end_reason": None,
                "answered_at": None, "ended_at": None, "duration_seconds": None,
            }
            row.update(spec)
            rows.append(row)
        with self.conn.cursor() as cur:
            cur.executemany(
                f"INSERT INTO messenger.call_sessions ({', '.join(CALL_COLUMNS)})"
                f" VALUES ({', '.join('%(' + c + ')s' for c in CALL_COLUMNS)})",
                rows,
            )
        self.ids.extend(r["call_id"] for r in rows)
        return rows

    def cleanup(self) -> None:
        delete_calls(self.conn, self.ids)
        self.ids.clear()


def delete_calls(conn: psycopg.Connection, ids: list[uuid.UUID]) -> None:
    """Deletes calls and every reaper row that refers to them, in one transaction."""
    with conn.transaction():
        conn.execute("DELETE FROM messenger.realtime_outbox WHERE reference_id = ANY(%s)", [ids])
        conn.execute("DELETE FROM messenger.call_reaper_quarantine WHERE call_id = ANY(%s)", [ids])
        conn.execute("DELETE FROM messenger.call_sessions WHERE call_id = ANY(%s)", [ids])
        # A floor a test's last full batch left lies among the calls deleted here; a later
        # test's calls due below it would wait for the end of a drain that never comes.
        # Deleting a floor is always safe (the next cycle walks from the start).
        conn.execute("DELETE FROM messenger.call_reaper_claim_floor")


def reap(conn: psycopg.Connection, **args: object) -> dict:
    """One cycle with named arguments; returns the result row as a dict."""
    query = sql.SQL("SELECT * FROM messenger.reap_call_timeouts({})").format(
        sql.SQL(", ").join(sql.SQL("{} => {}").format(sql.Identifier(n), sql.Placeholder(n))
                           for n in args))
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(query, args).fetchone()


def call_rows(conn: psycopg.Connection, ids: list[uuid.UUID]) -> dict[uuid.UUID, dict]:
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute("SELECT * FROM messenger.call_sessions WHERE call_id = ANY(%s)", [ids])
        return {r["call_id"]: r for r in cur}


def outbox_rows(conn: psycopg.Connection, ids: list[uuid.UUID]) -> list[dict]:
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(
            "SELECT * FROM messenger.realtime_outbox WHERE reference_id = ANY(%s) ORDER BY id",
            [ids],
        )
        return cur.fetchall()


def assert_all_or_nothing(conn: psycopg.Connection, ids: list[uuid.UUID]) -> tuple[int, int]:
    """No closed call without its outbox rows and no outbox row without its closed call.

    Returns (closed calls, outbox rows) for the caller's own expectations.
    """
    calls = call_rows(conn, ids)
    pushed: dict[uuid.UUID, list[str]] = {}
    for row in outbox_rows(conn, ids):
        pushed.setdefault(row["reference_id"], []).append(row["kind"])
    closed = 0
    for call_id, call in calls.items():
        kinds = sorted(pushed.get(call_id, []))
        if call["status"] == "Missed":
            closed += 1
            assert kinds == ["CallMissed"], (call_id, call["status"], kinds)
        elif call["status"] == "Failed":
            closed += 1
            assert kinds == ["CallEnded", "CallEnded"], (call_id, call["status"], kinds)
        else:
            assert kinds == [], (call_id, call["status"], kinds)
    return closed, sum(len(k) for k in pushed.values())


def lock_is_free(conn: psycopg.Connection) -> bool:
    """True when no session holds the single-runner lock (takes and gives it back)."""
    got = conn.execute(f"SELECT pg_catalog.pg_try_advisory_lock({LOCK_KEY_SQL})").fetchone()[0]
    if got:
        conn.execute(f"SELECT pg_catalog.pg_advisory_unlock({LOCK_KEY_SQL})")
    return got


def lock_granted_within(conn: psycopg.Connection, seconds: float, what: str) -> float:
    """Waits for the single-runner lock under lock_timeout = seconds, then gives it back: the
    server's timer, not a stopwatch, decides. Fails when the wait raised 55P03 (the lock was still
    held); returns how long it waited, for printing only. conn must be in autocommit."""
    started = time.monotonic()
    try:
        with conn.transaction():
            conn.execute("SELECT pg_catalog.set_config('lock_timeout', %s, true)",
                         [f"{round(seconds * 1000)}ms"])
            conn.execute(f"SELECT pg_catalog.pg_advisory_xact_lock({LOCK_KEY_SQL})")
    except psycopg.errors.LockNotAvailable:
        raise AssertionError(f"55P03: {what}: the lock was still held after a {seconds:.1f} s "
                             "lock_timeout") from None
    return time.monotonic() - started


def checksum(conn: psycopg.Connection) -> dict[str, str]:
    """md5 of every row of every table the reaper touches."""
    out = {}
    for table in STATE_TABLES:
        out[table] = conn.execute(
            f"SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) FROM {table} t"
        ).fetchone()[0]
    return out


def backend_pid(conn: psycopg.Connection) -> int:
    return conn.execute("SELECT pg_catalog.pg_backend_pid()").fetchone()[0]


def wait_for(predicate, timeout: float, what: str, interval: float = 0.05):
    """predicate()'s first truthy value, polled every `interval` seconds; an AssertionError
    naming `what` after `timeout` seconds.

    The one poller of every test directory (tests/crossdb, tests/libpq, ... import it from
    here): a wait that needs its own diagnostics catches the AssertionError and adds them.
    The clock is read before each call: a wait fails only on a predicate found false after
    the deadline, never on a slow predicate that comes back true past it.
    """
    deadline = time.monotonic() + timeout
    while True:
        past = time.monotonic() > deadline
        if value := predicate():
            return value
        if past:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


def waiting_on(conn: psycopg.Connection, pid: int, wait_event: str) -> bool:
    """True when backend pid is currently waiting on wait_event (e.g. 'PgSleep')."""
    row = conn.execute(
        "SELECT wait_event FROM pg_catalog.pg_stat_activity WHERE pid = %s", [pid]
    ).fetchone()
    return bool(row) and row[0] == wait_event


def takeovers(conn: psycopg.Connection, pid: int) -> list[tuple]:
    """(action, reason, role_name, seconds held, signalled) of every lock takeover of backend pid."""
    return conn.execute(
        "SELECT action, reason, role_name, extract(epoch FROM held_for)::float, signalled"
        "  FROM messenger.call_reaper_lock_takeovers WHERE pid = %s ORDER BY id", [pid]).fetchall()


def job(conn: psycopg.Connection) -> dict | None:
    """The scheduled reaper job's cron.job row, or None when pg_cron or the job is absent."""
    if conn.execute("SELECT pg_catalog.to_regclass('cron.job') IS NULL").fetchone()[0]:
        return None
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute("SELECT * FROM cron.job WHERE jobname = %s", [JOB_NAME]).fetchone()


def warden_is_running(conn: psycopg.Connection, since: datetime) -> bool:
    """The lock warden's pg_cron job is checking: on pg_cron 1.4 its minute-long CALL is
    executing; on 1.5+ (one check a second, milliseconds each, too short to sample) one of its
    runs has finished since `since`."""
    return conn.execute(
        "SELECT EXISTS (SELECT FROM pg_catalog.pg_stat_activity"
        "                WHERE state = 'active' AND query LIKE 'CALL messenger.run_call_reaper_warden(%%')"
        "    OR EXISTS (SELECT FROM cron.job_run_details AS d JOIN cron.job AS j USING (jobid)"
        "                WHERE j.jobname = %s AND d.status = 'succeeded' AND d.end_time > %s)",
        [WARDEN_JOB_NAME, since]).fetchone()[0]


def pg_cron_version(conn: psycopg.Connection) -> tuple[int, ...]:
    """pg_cron's extversion in this database (what the deploy and the procedures go by)."""
    return tuple(int(x) for x in conn.execute(
        "SELECT split_part(extversion, '-', 1) FROM pg_extension WHERE extname = 'pg_cron'"
    ).fetchone()[0].split("."))


def this_cluster(conn):
    """(version, name, data directory) of the local cluster serving `conn`, or a loud failure."""
    name, data_dir = conn.execute(
        "SELECT current_setting('cluster_name'), current_setting('data_directory')"
    ).fetchone()
    if "/" not in name:
        pytest.fail(f"cluster_name {name!r} is not VERSION/NAME: cannot find the test cluster")
    version, cluster = name.split("/", 1)
    listed = subprocess.run(["pg_lsclusters", "--no-header", version, cluster],
                            check=False, capture_output=True, text=True)
    if listed.returncode != 0 or data_dir not in listed.stdout:
        pytest.fail(f"pg_lsclusters does not show {name} at {data_dir}"
                    f" (PG_CLUSTER_CONF_ROOT={os.environ.get('PG_CLUSTER_CONF_ROOT')!r}):"
                    f" {listed.stdout}{listed.stderr}")
    conf_root = os.environ.get("PG_CLUSTER_CONF_ROOT", "/etc/postgresql")
    throwaway = os.path.exists(os.path.join(conf_root, version, cluster, ".by_pg_virtualenv"))
    if not throwaway and os.environ.get(RESTART_OPT_IN) != name:
        pytest.fail(f"refusing to restart {name}: not a pg_virtualenv cluster;"
                    f" set {RESTART_OPT_IN}={name} to allow it")
    return version, cluster, data_dir


def restart_server(conn, cluster, mode: str, while_down=None) -> None:
    """Stop the server (pg_ctl stop -m mode: immediate is a crash, fast a clean shutdown), run
    while_down() if given, and start it again.

    Not `pg_ctlcluster restart`: it decides whether the server runs from the external pid
    file /var/run/postgresql/VERSION-NAME.pid, which every pg_virtualenv cluster on the
    machine (all named regress) shares, so a concurrent run makes it skip the stop and then
    refuse to start. pg_ctl stop reads our own data directory's postmaster.pid.
    """
    version, name, data_dir = cluster
    pg_ctl = f"/usr/lib/postgresql/{version}/bin/pg_ctl"
    stop = [pg_ctl, "-D", data_dir, "stop", "-m", mode, "-w"]
    if os.geteuid() == 0:  # pg_ctl refuses root: run it as the cluster's owner
        stop = ["runuser", "-u", pwd.getpwuid(os.stat(data_dir).st_uid).pw_name, "--", *stop]
    for command in (stop, ["pg_ctlcluster", "--skip-systemctl-redirect", version, name, "start"]):
        done = subprocess.run(command, check=False, capture_output=True, text=True)
        assert done.returncode == 0, f"{command}: {done.stdout}{done.stderr}"
        if command is stop and while_down is not None:
            while_down()
    host, port = conn.info.host, str(conn.info.port)
    ready = ["pg_isready", "-q", "-h", host, "-p", port]
    wait_for(lambda: subprocess.run(ready, check=False).returncode == 0, 60,
             "the restarted server to accept connections", interval=0.2)
