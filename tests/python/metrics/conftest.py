"""Fixtures for the exporter tests: a real login as the monitor role, a paused reaper job and
the exporter as a real process."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator

import psycopg
import pytest
from metrics_support import JOB, LOCK_KEY, MONITOR, Exporter
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo


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
