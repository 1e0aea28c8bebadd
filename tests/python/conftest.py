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
from exporter_support import JOB, LOCK_KEY, MONITOR, Exporter
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo


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


# ---- Exporter tests (issue 4): a real login as the monitor role, a paused job, the exporter as a
# process. Helpers live in exporter_support.py.


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
def paused(request: pytest.FixtureRequest, dsn: str) -> Iterator[None]:
    """No scheduled cycle commits while the test runs, so counter deltas are the test's own.

    Uses the suite's `reaper_paused` fixture when conftest.py provides it; otherwise
    deactivates the pg_cron job (if deployed) and waits out a cycle in flight by taking the
    single-runner lock once.
    """
    try:
        request.getfixturevalue("reaper_paused")
    except pytest.FixtureLookupError:
        pass
    else:
        yield
        return
    with psycopg.connect(dsn, autocommit=True) as conn:
        job = None
        if conn.execute("SELECT to_regclass('cron.job') IS NOT NULL").fetchone()[0]:
            row = conn.execute("SELECT jobid, active FROM cron.job WHERE jobname = %s",
                               [JOB]).fetchone()
            if row:
                job = row
                conn.execute("SELECT cron.alter_job(%s, active := false)", [row[0]])
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", [LOCK_KEY])
        try:
            yield
        finally:
            if job:
                conn.execute("SELECT cron.alter_job(%s, active := %s)", [job[0], job[1]])


@pytest.fixture
def start_exporter() -> Iterator[Callable[..., Exporter]]:
    """Factory: start_exporter("--dsn", dsn, ...) -> a running Exporter, stopped after the test."""
    started: list[Exporter] = []

    def start(*args: str, env: dict[str, str] | None = None) -> Exporter:
        exporter = Exporter(*args, env=env)
        started.append(exporter)
        return exporter

    yield start
    for exporter in started:
        exporter.stop()
