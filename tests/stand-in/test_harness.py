"""The test cluster is configured the way server.conf says the server must be (docs/design.md).
A test of the harness, not of the reaper: run by scripts/test-in-cluster with the stand-in's
tests, before the deploy (the PG* variables name the cluster's messenger database)."""

import time

import psycopg
import pytest


@pytest.fixture
def conn():
    with psycopg.connect("", autocommit=True) as connection:
        yield connection


def test_pg_cron_is_preloaded(conn):
    libs = conn.execute("SHOW shared_preload_libraries").fetchone()[0]
    assert "pg_cron" in [lib.strip() for lib in libs.split(",")]


def test_pg_cron_serves_this_database(conn):
    cron_db, current_db = conn.execute(
        "SELECT current_setting('cron.database_name'), current_database()"
    ).fetchone()
    assert cron_db == current_db


def test_pg_cron_runs_jobs_as_background_workers(conn):
    assert conn.execute("SHOW cron.use_background_workers").fetchone()[0] == "on"


def test_pg_cron_launcher_is_running(conn):
    # The launcher restarts by itself after an error; give it a few seconds.
    deadline = time.monotonic() + 10
    while True:
        launchers = conn.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE backend_type = 'pg_cron launcher' AND datname = current_database()"
        ).fetchone()[0]
        if launchers == 1 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert launchers == 1
