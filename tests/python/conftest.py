"""Shared fixtures: the database under test comes from the environment.

DATABASE_URL wins; otherwise libpq's PG* variables (PGHOST, PGPORT, PGUSER,
PGPASSWORD, PGDATABASE), which psycopg reads when the conninfo is empty.
`make test` runs the suite inside pg_virtualenv, which sets the PG* variables.

A database that is unreachable, or that has no `messenger` schema, fails every
test loudly: a suite that skips itself would let a broken CI look green.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator

import psycopg
import pytest
import reaper_support
from exporter_support import Exporter
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from reaper_facts import JOB_NAME, LOCK_KEY_SQL
from reaper_facts import MONITOR_ROLE as MONITOR
from reaper_facts import OPERATOR_ROLE as OPERATOR


def _describe(dsn: str) -> str:
    """Where `dsn` points, for error messages: never the password."""
    params = conninfo_to_dict(dsn) if dsn else {}
    parts = []
    for key, env in (("host", "PGHOST"), ("port", "PGPORT"),
                     ("dbname", "PGDATABASE"), ("user", "PGUSER")):
        value = params.get(key) or os.environ.get(env)
        if value:
            parts.append(f"{key}={value}")
    source = "DATABASE_URL" if dsn else "PG* variables"
    return f"{' '.join(parts) or 'libpq defaults'} (from {source})"


@pytest.fixture(scope="session")
def dsn() -> str:
    """Connection string for the database under test ("" means: PG* variables)."""
    dsn = os.environ.get("DATABASE_URL", "")
    try:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
            row = conn.execute(
                "SELECT pg_catalog.to_regnamespace('messenger') IS NOT NULL"
            ).fetchone()
    except psycopg.Error as exc:
        error = str(exc)  # failed outside the except block: no chained traceback
    else:
        error = None
    if error is not None:
        pytest.fail(f"cannot connect to {_describe(dsn)}: {error}", pytrace=False)
    if not (row and row[0]):
        pytest.fail(
            f"schema messenger is missing in {_describe(dsn)}: run `sqitch deploy` first",
            pytrace=False,
        )
    return dsn


@pytest.fixture
def conn(dsn: str) -> Iterator[psycopg.Connection]:
    """An autocommit connection, closed after the test."""
    with psycopg.connect(dsn, autocommit=True) as connection:
        yield connection


@pytest.fixture
def make_conn(dsn: str) -> Iterator[Callable[..., psycopg.Connection]]:
    """Factory for extra connections (concurrency tests); all closed after the test.

    Keyword arguments go to psycopg.connect(); autocommit defaults to True,
    pass autocommit=False for a connection that holds an open transaction.
    """
    opened: list[psycopg.Connection] = []

    def make(**kwargs: object) -> psycopg.Connection:
        kwargs.setdefault("autocommit", True)
        connection = psycopg.connect(dsn, **kwargs)
        opened.append(connection)
        return connection

    yield make
    for connection in opened:
        connection.close()


# ---- Real logins as a role (role attributes and pg_hba as a client meets them) ----

@pytest.fixture
def login(conn, dsn):
    """login(role): a real connection as `role`, with a password that lives for this test."""
    changed = []

    def connect(role):
        password = secrets.token_urlsafe(24)
        conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(sql.Identifier(role),
                                                                 sql.Literal(password)))
        changed.append(role)
        params = conninfo_to_dict(dsn)
        params.update(user=role, password=password)
        if not params.get("host"):
            params["host"] = "localhost"  # password auth; the Unix socket may be peer-only
        return psycopg.connect(**params, autocommit=True)

    yield connect
    for role in changed:
        if conn.execute("SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = %s", [role]).fetchone():
            conn.execute(sql.SQL("ALTER ROLE {} PASSWORD NULL").format(sql.Identifier(role)))


@pytest.fixture
def operator_login(conn, login):
    """A DBA's own login that was granted the operator role and nothing else."""
    name = f"reaper_test_dba_{secrets.token_hex(4)}"
    conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(name)))
    conn.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(OPERATOR), sql.Identifier(name)))
    try:
        with login(name) as dba:
            yield dba
    finally:
        conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))



# ---- Multi-connection reaper tests: calls made by a test, deleted after it ----

@pytest.fixture
def calls(dsn: str) -> Iterator[reaper_support.Calls]:
    """Makes committed calls for one test and deletes them and their outbox rows after it."""
    with psycopg.connect(dsn, autocommit=True) as connection:
        made = reaper_support.Calls(connection)
        yield made
    # A fresh connection: the test may have restarted the server under the first one.
    with psycopg.connect(dsn, autocommit=True) as connection:
        reaper_support.delete_calls(connection, made.ids)


def set_reaper_job_active(conn: psycopg.Connection, active: bool) -> bool:
    """Resume or pause the scheduled reaper with its SQL verbs; returns whether it ran before."""
    verb = "resume_call_reaper" if active else "pause_call_reaper"
    changed = conn.execute(f"SELECT messenger.{verb}()").fetchone()[0]
    # resume returns true when it was paused; pause returns true when it was running.
    return changed != active


def wait_reaper_idle(conn: psycopg.Connection, timeout: float = 90.0) -> None:
    """Wait until no CALL of the reaper job is executing and nobody holds the reaper's lock.

    messenger.call_reaper_status() counts the job's CALLs in pg_stat_activity (not
    cron.job_run_details, which pg_cron 1.4 may close early). A paused reaper's CALL returns
    within about a second (it re-reads settings.paused while it sleeps and before every tick).
    Then take and drop the single-runner lock: that waits for a cycle run by hand.
    """
    reaper_support.wait_for(lambda: conn.execute(
        "SELECT job_calls_in_flight = 0 FROM messenger.call_reaper_status()").fetchone()[0],
        timeout, f"the runs of {JOB_NAME} in flight to end", interval=0.2)
    conn.execute("SELECT set_config('lock_timeout', %s, false)", (f"{int(timeout * 1000)}ms",))
    conn.execute(f"SELECT pg_advisory_lock({LOCK_KEY_SQL})")
    conn.execute(f"SELECT pg_advisory_unlock({LOCK_KEY_SQL})")
    conn.execute("RESET lock_timeout")


@pytest.fixture
def reaper_paused(dsn: str) -> Iterator[None]:
    """The scheduled reaper job is paused and no cycle is in flight for the whole test.

    Use it in every test that runs cycles and asserts lock_acquired or counts, or that needs
    overdue calls nobody else closes. The job is resumed afterwards unless it was already paused.
    """
    with psycopg.connect(dsn, autocommit=True) as control:
        was_active = set_reaper_job_active(control, False)
        try:
            wait_reaper_idle(control)
            yield
        finally:
            if was_active:
                # A fresh connection: the test may have restarted the server under `control`.
                with psycopg.connect(dsn, autocommit=True) as resume:
                    set_reaper_job_active(resume, True)


@pytest.fixture
def warden_running(conn: psycopg.Connection) -> None:
    """The lock warden is checking (reaper_support.warden_is_running). On pg_cron 1.4 its CALL
    starts at each minute boundary, so right after a server restart (test_faults) there is none
    until the next minute: with the default lock_ttl of 1 min that gap cannot matter (a holder
    cannot be stale before the first run), with the few seconds the lock tests set it would."""
    since = conn.execute("SELECT clock_timestamp()").fetchone()[0]
    try:
        reaper_support.wait_for(lambda: reaper_support.warden_is_running(conn, since), 75,
                                "the lock warden's job to run", interval=0.5)
    except AssertionError as timed_out:
        # pg_cron's last runs tell a job that never started from one that fails at once.
        runs = conn.execute(
            "SELECT j.jobname, d.status, d.return_message, d.start_time FROM cron.job_run_details AS d"
            " JOIN cron.job AS j USING (jobid) ORDER BY d.start_time DESC LIMIT 6").fetchall()
        raise AssertionError(f"{timed_out}; pg_cron's last runs: {runs}") from None


# ---- Exporter tests: a real login as the monitor role and the exporter as a process.
# Helpers live in exporter_support.py.


@pytest.fixture
def monitor_dsn(dsn: str) -> Iterator[str]:
    """DSN that logs in as messenger_call_reaper_monitor with a password set for this test.

    A real login, not SET ROLE: the test then sees exactly what the exporter's role sees. The
    password is removed again afterwards (the deploy gives the role none); per test, so another
    test that sets or clears the role's password cannot pull it from under this one.
    """
    password = secrets.token_urlsafe(24)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(
            sql.Identifier(MONITOR), sql.Literal(password)))
    params = conninfo_to_dict(dsn) if dsn else {}
    params.update(user=MONITOR, password=password)
    monitor = make_conninfo("", **params)
    try:
        with psycopg.connect(monitor, connect_timeout=10) as conn:
            conn.execute("SELECT 1")
    except psycopg.OperationalError as exc:
        pytest.fail(f"cannot log in as {MONITOR} with a password (pg_hba must allow "
                    f"password auth for it, e.g. over localhost): {exc}", pytrace=False)
    yield monitor
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("ALTER ROLE {} PASSWORD NULL").format(sql.Identifier(MONITOR)))


@pytest.fixture
def start_exporter() -> Iterator[Callable[..., Exporter]]:
    """Factory: start_exporter("--dsn", dsn, ...) -> a running Exporter, stopped after the test
    (command=: another release's exporter, exporter_support.Exporter)."""
    started: list[Exporter] = []

    def start(*args: str, env: dict[str, str] | None = None,
              command: list[str] | None = None) -> Exporter:
        exporter = Exporter(*args, env=env, command=command)
        started.append(exporter)
        return exporter

    yield start
    for exporter in started:
        exporter.stop()
