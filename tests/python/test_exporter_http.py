"""The installed console script over real HTTP: every published metric with its type and the
database's values, counters that outlive the process, and a process that keeps serving when
the database is unreachable."""

from __future__ import annotations

import socket
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from call_reaper_exporter import BUILD, PREFIX
from exporter_support import run_totals, sample, samples_of
from psycopg.conninfo import conninfo_to_dict
from reaper_support import reap

P = PREFIX
# Published families (docs/design.md, "Observability") and the types they must have over HTTP.
PUBLISHED_FAMILIES = {
    P + "run": "counter",
    P + "cycle_duration_seconds": "histogram",
    P + "items": "counter",
    P + "active_backlog": "gauge",
    P + "skip_locked": "counter",
    P + "errors": "counter",
    P + "up": "gauge",
    P + "reap_lag_seconds": "histogram",
    P + "last_success_timestamp_seconds": "gauge",
    P + "last_run_timestamp_seconds": "gauge",
}
FUTURE = datetime(2100, 1, 1, tzinfo=UTC)


def metrics_row(conn) -> dict:
    cur = conn.execute("SELECT * FROM messenger.call_reaper_metrics()")
    return dict(zip([c.name for c in cur.description], cur.fetchone(), strict=True))


def test_serves_every_published_metric_with_the_database_values(conn, monitor_dsn, start_exporter,
                                                                 reaper_paused):
    reap(conn, as_of=FUTURE)  # at least one cycle, so no value is trivially zero
    exporter = start_exporter("--dsn", monitor_dsn)
    samples, types = exporter.scrape()
    row = metrics_row(conn)

    assert {name: types.get(name) for name in PUBLISHED_FAMILIES} == PUBLISHED_FAMILIES
    assert sample(samples, P + "up") == 1
    for result, value in run_totals(row).items():
        assert sample(samples, P + "run_total", result=result) == value
    for outcome in ("missed", "failed", "poisoned"):
        assert sample(samples, P + "items_total", outcome=outcome) == row["items_" + outcome]
    assert sample(samples, P + "skip_locked_total") == row["skip_locked"]
    assert sample(samples, P + "errors_total") == row["errors"]
    assert sample(samples, P + "active_backlog", phase="ring_timeout") == row[
        "backlog_ring_timeout"]
    assert sample(samples, P + "active_backlog", phase="stale_answered") == row[
        "backlog_stale_answered"]
    assert sample(samples, P + "cycle_duration_seconds_count") == row["cycle_duration_count"] > 0
    assert sample(samples, P + "cycle_duration_seconds_bucket", le="+Inf") == row[
        "cycle_duration_count"]
    assert [sample(samples, P + "cycle_duration_seconds_bucket", le=str(float(b)))
            for b in row["cycle_duration_bounds"]] == row["cycle_duration_buckets"]
    assert [sample(samples, P + "reap_lag_seconds_bucket", le=str(float(b)))
            for b in row["reap_lag_bounds"]] == row["reap_lag_buckets"]
    assert sample(samples, P + "last_success_timestamp_seconds") == row[
        "last_success_at"].timestamp()
    assert sample(samples, P + "polling_interval_seconds") == 15


def test_counters_survive_an_exporter_restart(conn, monitor_dsn, start_exporter, reaper_paused):
    reap(conn, as_of=FUTURE)
    first = start_exporter("--dsn", monitor_dsn)
    before, _ = first.scrape()
    assert first.stop() == 0, "SIGTERM is a clean shutdown"

    # A cycle while no exporter runs: the new process must show it on top of the old totals.
    reap(conn, as_of=FUTURE)
    second = start_exporter("--dsn", monitor_dsn)
    assert second.proc.pid != first.proc.pid
    after, _ = second.scrape()
    completed = P + "run_total"
    assert sample(before, completed, result="completed") >= 1
    assert sample(after, completed, result="completed") == sample(
        before, completed, result="completed") + 1
    assert sample(after, P + "cycle_duration_seconds_count") == sample(
        before, P + "cycle_duration_seconds_count") + 1
    for (name, labels), value in samples_of(before.collect()).items():
        if name.startswith(P) and name.endswith("_total") and name != completed:
            assert sample(after, name, **dict(labels)) == value, name


def test_unreachable_database_up_0_and_keeps_serving(start_exporter):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    password = "s3cret-in-the-dsn"
    exporter = start_exporter(
        "--dsn", f"postgresql://{P}user:{password}@127.0.0.1:{port}/messenger",
        "--connect-timeout", "2")
    for _ in range(3):
        samples, _ = exporter.scrape()
        ours = {key: value for key, value in samples_of(samples.collect()).items()
                if key[0].startswith(P)}
        assert ours == {(P + "up", frozenset()): 0, (P + "build_info", frozenset(BUILD.items())): 1}
    assert exporter.proc.poll() is None, "the process keeps running"
    assert exporter.stop() == 0
    assert password not in exporter.log
    assert "password=********" in exporter.log
    assert "OperationalError" in exporter.log


def test_dsn_defaults_to_database_url_then_libpq_variables(monitor_dsn, start_exporter):
    params = conninfo_to_dict(monitor_dsn)
    env_dsn = {"PGUSER": params["user"], "PGPASSWORD": params["password"]}
    for key, var in (("host", "PGHOST"), ("port", "PGPORT"), ("dbname", "PGDATABASE")):
        if key in params:
            env_dsn[var] = params[key]
    from_env = start_exporter(env=env_dsn)  # no --dsn, no DATABASE_URL
    samples, _ = from_env.scrape()
    assert sample(samples, P + "up") == 1, from_env.log
    assert 'dsn="\'\' (libpq PG* environment)"' in from_env.log

    from_url = start_exporter(env={"DATABASE_URL": monitor_dsn, "PGUSER": "nobody"})
    samples, _ = from_url.scrape()
    assert sample(samples, P + "up") == 1, from_url.log
    assert params["password"] not in from_url.log


def test_malformed_dsn_refuses_to_start_without_echoing_it():
    script = Path(sys.executable).with_name("call-reaper-exporter")
    done = subprocess.run([str(script), "--dsn", "host=db password hunter2"],
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 2
    assert "not a valid libpq connection string" in done.stderr
    assert "hunter2" not in done.stderr + done.stdout
