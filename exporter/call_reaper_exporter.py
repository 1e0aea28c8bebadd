"""Prometheus exporter of the call-timeout reaper.

The reaper keeps its counters and histograms in the database (messenger.call_reaper_counters),
so this process holds no state: every scrape runs ONE query,
``SELECT * FROM messenger.call_reaper_metrics()``, as the read-only role
messenger_call_reaper_monitor, and turns the row into metric families. Restarting the exporter,
or running several, changes nothing.

When the database is down, slow or refuses us, the scrape reports
``messenger_call_reaper_up 0`` (and nothing else from the database) and the process keeps
serving; the next scrape connects again.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator

import psycopg
from prometheus_client import REGISTRY, start_http_server
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import dict_row

log = logging.getLogger("call_reaper_exporter")

DEFAULT_PORT = 9648
QUERY = "SELECT * FROM messenger.call_reaper_metrics()"
PREFIX = "messenger_call_reaper_"


def mask_dsn(dsn: str) -> str:
    """The DSN with any password replaced, safe to log (URL or key=value form)."""
    if not dsn:
        return "'' (libpq PG* environment)"
    params = conninfo_to_dict(dsn)
    if "password" in params:
        params["password"] = "********"
    return make_conninfo("", **params)


def _new_families() -> list[Metric]:
    """Every family the exporter serves, empty, in exposition order (up first)."""
    up = GaugeMetricFamily(
        PREFIX + "up", "1 when the database answered this scrape's query, else 0.")
    runs = CounterMetricFamily(
        PREFIX + "run_total",
        "Reaper cycles run, by result: completed, skipped (lock busy) or failed (rolled back).",
        labels=["result"])
    items = CounterMetricFamily(
        PREFIX + "items_total",
        "Calls handled by the reaper, by outcome: missed (ring timeout), failed (stale answered), "
        "poisoned (raised; left active and quarantined).",
        labels=["outcome"])
    skip_locked = CounterMetricFamily(
        PREFIX + "skip_locked_total",
        "Overdue calls a cycle skipped because another transaction held them (SKIP LOCKED).")
    errors = CounterMetricFamily(
        PREFIX + "errors_total",
        "Reaper errors: poisoned calls plus failed (rolled back) cycles.")
    duration = HistogramMetricFamily(
        PREFIX + "cycle_duration_seconds",
        "Duration of reaper cycles that held the lock (completed or failed).")
    lag = HistogramMetricFamily(
        PREFIX + "reap_lag_seconds",
        "How long after its window each call was closed: ended_at - (started_at + ring_timeout) "
        "for Missed, ended_at - (updated_at + stale_timeout) for Failed.")
    backlog = GaugeMetricFamily(
        PREFIX + "active_backlog",
        "Active calls already past their window now (configured timeouts), by reaper phase.",
        labels=["phase"])
    quarantined = GaugeMetricFamily(
        PREFIX + "quarantined_calls",
        "Poison calls parked in messenger.call_reaper_quarantine, waiting for their backoff.")
    last_run = GaugeMetricFamily(
        PREFIX + "last_run_timestamp_seconds",
        "Unix time the last cycle that held the lock finished; 0 if none ever did.")
    last_success = GaugeMetricFamily(
        PREFIX + "last_success_timestamp_seconds",
        "Unix time the last completed cycle finished; 0 if none ever did.")
    interval = GaugeMetricFamily(
        PREFIX + "polling_interval_seconds",
        "Configured polling interval of the scheduled job (messenger.call_reaper_settings).")
    return [up, runs, items, skip_locked, errors, duration, lag, backlog, quarantined, last_run,
            last_success, interval]


def _families(row: dict | None) -> list[Metric]:
    """Metric families for one scrape; row None means the database did not answer."""
    families = _new_families()
    (up, runs, items, skip_locked, errors, duration, lag, backlog, quarantined, last_run,
     last_success, interval) = families
    if row is None:
        up.add_metric([], 0)
        return [up]

    up.add_metric([], 1)
    runs.add_metric(["completed"], row["runs_completed"])
    runs.add_metric(["skipped"], row["runs_skipped"])
    runs.add_metric(["failed"], row["runs_failed"])
    items.add_metric(["missed"], row["items_missed"])
    items.add_metric(["failed"], row["items_failed"])
    items.add_metric(["poisoned"], row["items_poisoned"])
    skip_locked.add_metric([], row["skip_locked"])
    errors.add_metric([], row["errors"])
    for family, name in ((duration, "cycle_duration"), (lag, "reap_lag")):
        # The table keeps cumulative ("le") counts beside fixed bounds; +Inf is the total count.
        buckets = [(floatToGoString(le), n)
                   for le, n in zip(row[name + "_bounds"], row[name + "_buckets"], strict=True)]
        buckets.append(("+Inf", row[name + "_count"]))
        family.add_metric([], buckets, row[name + "_sum"])
    backlog.add_metric(["ring_timeout"], row["backlog_ring_timeout"])
    backlog.add_metric(["stale_answered"], row["backlog_stale_answered"])
    quarantined.add_metric([], row["quarantined"])
    last_run.add_metric([], row["last_run_at"].timestamp() if row["last_run_at"] else 0)
    last_success.add_metric(
        [], row["last_success_at"].timestamp() if row["last_success_at"] else 0)
    interval.add_metric([], row["polling_interval"].total_seconds())
    return families


class ReaperCollector(Collector):
    """One query per scrape over one reused connection, reconnecting after any failure."""

    def __init__(self, dsn: str, connect_timeout: float = 5, statement_timeout: float = 5):
        self._dsn = dsn
        self._connect_timeout = connect_timeout
        self._statement_timeout = statement_timeout
        self._conn: psycopg.Connection | None = None
        self._lock = threading.Lock()
        self._healthy: bool | None = None

    def describe(self) -> Iterator[Metric]:
        # Registering calls describe(); answering from the empty families keeps it off the DB.
        yield from _new_families()

    def collect(self) -> Iterator[Metric]:
        yield from _families(self.scrape())

    def scrape(self) -> dict | None:
        """The metrics row, or None (logged) when the database did not answer in time."""
        # Concurrent scrapes share the connection; one stuck behind a slow one gives up rather
        # than piling up threads.
        if not self._lock.acquire(timeout=self._connect_timeout + self._statement_timeout):
            log.warning("scrape skipped: the previous scrape is still waiting for the database")
            return None
        try:
            try:
                if self._conn is None:
                    self._conn = self._connect()
                row = self._conn.execute(QUERY).fetchone()
            except psycopg.Error as exc:
                self._report(False, exc)
                self.close()
                return None
            self._report(True)
            return row
        finally:
            self._lock.release()

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _connect(self) -> psycopg.Connection:
        conn = psycopg.connect(
            self._dsn,
            autocommit=True,
            row_factory=dict_row,
            connect_timeout=max(1, round(self._connect_timeout)),
            application_name="call-reaper-exporter",
            # A vanished server host must not hang a scrape until TCP gives up on its own.
            tcp_user_timeout=int((self._connect_timeout + self._statement_timeout) * 1000),
            keepalives=1,
            keepalives_idle=30,
        )
        try:
            conn.execute("SELECT pg_catalog.set_config('statement_timeout', %s, false)",
                         [str(int(self._statement_timeout * 1000))])
        except psycopg.Error:
            conn.close()
            raise
        info = conn.info
        log.info("connected to host=%s port=%s dbname=%s user=%s (backend pid %s)",
                 info.host, info.port, info.dbname, info.user, info.backend_pid)
        return conn

    def _report(self, ok: bool, exc: Exception | None = None) -> None:
        # Log state changes loudly and repeats quietly: a long outage is one warning, not one per
        # scrape. psycopg's messages name host and port, never the password.
        if ok and self._healthy is False:
            log.warning("database answers again")
        elif not ok:
            level = logging.WARNING if self._healthy is not False else logging.DEBUG
            log.log(level, "scrape failed, reporting %sup 0: %s: %s",
                    PREFIX, type(exc).__name__, str(exc).strip().replace("\n", " "))
        self._healthy = ok


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="call-reaper-exporter",
        description="Serve the call-timeout reaper's metrics (kept in PostgreSQL) on /metrics.")
    parser.add_argument(
        "--dsn", default=os.environ.get("DATABASE_URL", ""),
        help="libpq connection string or URL of the messenger database, as the role "
             "messenger_call_reaper_monitor (default: $DATABASE_URL, else the libpq PG* "
             "variables: PGHOST, PGPORT, PGUSER, PGPASSWORD or ~/.pgpass, PGDATABASE)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                        help=f"HTTP port to serve /metrics on (default {DEFAULT_PORT}; 0 = any)")
    parser.add_argument("--listen-address", default="0.0.0.0",
                        help="address to bind (default 0.0.0.0, all IPv4 interfaces)")
    parser.add_argument("--connect-timeout", type=float, default=5, metavar="SECONDS",
                        help="give up connecting after this long; the scrape reports up 0 "
                             "(default 5)")
    parser.add_argument("--statement-timeout", type=float, default=5, metavar="SECONDS",
                        help="server-side limit on the scrape query (default 5)")
    parser.add_argument("--log-level", default="INFO",
                        choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    args = parser.parse_args(argv)
    try:
        args.masked_dsn = mask_dsn(args.dsn)
    except psycopg.ProgrammingError:
        # A malformed DSN is a configuration error, not an outage: refuse to start. libpq's
        # message quotes the token it choked on, which may be the password: not repeated here.
        parser.error("--dsn (or DATABASE_URL) is not a valid libpq connection string or URL")
    if args.connect_timeout <= 0 or args.statement_timeout <= 0:
        parser.error("--connect-timeout and --statement-timeout must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    collector = ReaperCollector(args.dsn, args.connect_timeout, args.statement_timeout)
    REGISTRY.register(collector)
    server, _ = start_http_server(args.port, addr=args.listen_address, registry=REGISTRY)
    host, port = server.server_address[:2]
    log.info("serving /metrics on %s:%d, dsn=%s", host, port, args.masked_dsn)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        while not stop.wait(3600):
            pass
    except KeyboardInterrupt:
        pass
    server.shutdown()
    collector.close()
    log.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
