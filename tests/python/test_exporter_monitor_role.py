"""Logged in as messenger_call_reaper_monitor (a real password login, as the exporter does),
the role reads the reaper's numbers through call_reaper_metrics() and nothing else."""

from __future__ import annotations

import psycopg
import pytest
from psycopg import sql
from reaper_facts import MONITOR_ROLE

TABLES = ["call_sessions", "realtime_outbox", "call_reaper_counters", "call_reaper_runs",
          "call_reaper_settings", "call_reaper_quarantine"]


@pytest.fixture
def monitor(monitor_dsn):
    with psycopg.connect(monitor_dsn, autocommit=True) as conn:
        yield conn


@pytest.mark.parametrize("table", TABLES)
def test_monitor_cannot_read_table(monitor, table):
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        monitor.execute(sql.SQL("SELECT * FROM messenger.{} LIMIT 1").format(sql.Identifier(table)))


def test_monitor_cannot_run_the_reaper(monitor):
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        monitor.execute("SELECT * FROM messenger.reap_call_timeouts()")


def test_monitor_reads_the_metrics_as_itself(monitor):
    user, rows = monitor.execute(
        "SELECT current_user, (SELECT count(*) FROM messenger.call_reaper_metrics())").fetchone()
    assert (user, rows) == (MONITOR_ROLE, 1)
