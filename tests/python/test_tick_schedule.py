"""The tick procedure picks its path (one cycle per CALL, or the ticks of the current minute) by
the schedule cron/call_reaper recorded for its job, not by pg_cron's version in this database.

A product database whose jobs pg_cron keeps in another database (cron.database_name = postgres,
docs/scheduling.md, "pg_cron in another database") has no pg_cron of its own: by pg_extension the procedure took the
pg_cron 1.4 minute loop under a '15 seconds' schedule, and on pg_cron 1.6.7 each run held a job
slot about 9 s of every 15 s. CI has pg_cron 1.4 only, so the recorded schedule of a 1.5+ job is
written here as the cron changes write it; the database is deployed without pg_cron, like that
product database."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from adoption_support import deployed_without_cron
from reaper_facts import JOB_ROLE

DB = "tick_schedule"


@pytest.fixture(scope="module")
def product(dsn: str) -> Iterator[psycopg.Connection]:
    with deployed_without_cron(dsn, DB) as conn:
        yield conn


def test_a_job_recorded_on_a_schedule_in_seconds_runs_one_cycle_per_call(product):
    # One second: were it the minute loop, this CALL would run a cycle every second until the
    # minute ends (the old code did, here: no pg_cron in this database).
    product.execute("UPDATE messenger.call_reaper_settings SET polling_interval = '1 second', paused = false")
    product.execute(
        "INSERT INTO messenger.call_reaper_cron_jobs (kind, jobname, cron_database, schedule, cron_version)"
        " VALUES ('reaper', 'messenger-call-timeout-reaper', 'postgres', '1 seconds', '1.6.7')")
    since = product.execute("SELECT clock_timestamp()").fetchone()[0]
    idle = product.execute("SELECT idle_cycles FROM messenger.call_reaper_metrics()").fetchone()[0]
    product.execute(f"SET ROLE {JOB_ROLE}")
    product.execute("CALL messenger.run_call_reaper_ticks()")
    product.execute("RESET ROLE")
    runs = product.execute(
        "SELECT result FROM messenger.call_reaper_runs WHERE started_at >= %s", (since,)).fetchall()
    # One idle cycle: nothing rings, so counted apart and no ledger row.
    assert runs == [] and product.execute("SELECT idle_cycles FROM messenger.call_reaper_metrics()").fetchone()[0] == idle + 1
