"""Logged in as messenger_call_reaper_monitor through the exporter's own DSN (a real password
login), the role reads the reaper's numbers through call_reaper_metrics(). What it is refused
(every table, the reaper, anything but read-only calls) is in test_security.py, once; its grants
in tests/pgtap/privileges.sql."""

from __future__ import annotations

import psycopg
import pytest
from reaper_facts import MONITOR_ROLE


@pytest.fixture
def monitor(monitor_dsn):
    with psycopg.connect(monitor_dsn, autocommit=True) as conn:
        yield conn


def test_monitor_reads_the_metrics_as_itself(monitor):
    user, rows = monitor.execute(
        "SELECT current_user, (SELECT count(*) FROM messenger.call_reaper_metrics())").fetchone()
    assert (user, rows) == (MONITOR_ROLE, 1)
