"""Shared fixtures: the database under test comes from the environment.

DATABASE_URL wins; otherwise libpq's PG* variables (PGHOST, PGPORT, PGUSER,
PGPASSWORD, PGDATABASE), which psycopg reads when the conninfo is empty.
`make test` runs the suite inside pg_virtualenv, which sets the PG* variables.

A database that is unreachable, or that has no `messenger` schema, fails every
test loudly: a suite that skips itself would let a broken CI look green.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import psycopg
import pytest
import reaper_support
from psycopg.conninfo import conninfo_to_dict


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


# ---- Multi-connection reaper tests (issue 5): calls made by a test, deleted after it ----

@pytest.fixture
def calls(dsn: str) -> Iterator[reaper_support.Calls]:
    """Makes committed calls for one test and deletes them and their outbox rows after it."""
    with psycopg.connect(dsn, autocommit=True) as connection:
        made = reaper_support.Calls(connection)
        yield made
    # A fresh connection: the test may have restarted the server under the first one.
    with psycopg.connect(dsn, autocommit=True) as connection:
        reaper_support.delete_calls(connection, made.ids)


@pytest.fixture
def reaper_paused(dsn: str) -> Iterator[None]:
    """The scheduled reaper job is paused (and holds no lock) for the test."""
    with reaper_support.job_paused(dsn):
        yield
