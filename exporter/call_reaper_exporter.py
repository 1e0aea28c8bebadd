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
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import psycopg
from call_reaper_dsn import mask_dsn
from prometheus_client import REGISTRY, start_http_server
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString
from psycopg.rows import dict_row

log = logging.getLogger("call_reaper_exporter")

DEFAULT_PORT = 9648
QUERY = "SELECT * FROM messenger.call_reaper_metrics()"
PREFIX = "messenger_call_reaper_"


def _number(value: Any) -> float:
    return float(value)


def _epoch(value: datetime | None) -> float:
    """Unix time; 0 for a cycle that never happened (as Prometheus's timestamp gauges do)."""
    return value.timestamp() if value else 0.0


def _seconds(value: timedelta) -> float:
    return value.total_seconds()


def _flag(value: bool | None) -> float:
    """1 for true; 0 for false and for unknown (NULL)."""
    return 1.0 if value else 0.0


_FAMILY_TYPES = {
    "counter": CounterMetricFamily,
    "gauge": GaugeMetricFamily,
    "histogram": HistogramMetricFamily,
}


@dataclass(frozen=True)
class MetricSpec:
    """One metric family and where its samples come from in call_reaper_metrics()'s row.

    ``source`` maps each sample's label values to the column that holds its value. A
    histogram names the stem of its four columns (<stem>_bounds, _buckets, _count, _sum).
    ``source=None`` is the scrape's own health (``up``): 1 when the row arrived, else 0.
    ``optional``: a NULL column means "not known" and its sample is left out, not reported as 0.
    """

    name: str
    type: str
    help: str
    labels: tuple[str, ...] = ()
    source: Mapping[tuple[str, ...], str] | None = None
    convert: Callable[[Any], float] = _number
    optional: bool = False

    def family(self) -> Metric:
        return _FAMILY_TYPES[self.type](PREFIX + self.name, self.help, labels=list(self.labels))

    def columns(self) -> set[str]:
        """The call_reaper_metrics() columns this family reads."""
        if self.source is None:
            return set()
        if self.type == "histogram":
            return {stem + part for stem in self.source.values()
                    for part in ("_bounds", "_buckets", "_count", "_sum")}
        return set(self.source.values())


# Every family the exporter serves, in exposition order. Names and label values are the published
# contract (docs/design.md, "Observability"), source columns are call_reaper_metrics()'s. The
# label values use "failed" for two things (README, "Words"): a rolled-back CYCLE in
# run_total{result="failed"} (source column runs_rolled_back), a CALL closed as Failed in
# items_total{outcome="failed"}.
METRICS: tuple[MetricSpec, ...] = (
    MetricSpec("up", "gauge", "1 when the database answered this scrape's query, else 0."),
    MetricSpec("run_total", "counter",
               "Reaper cycles run, by result: completed, skipped (lock busy) or failed (rolled back).",
               ("result",), {("completed",): "runs_completed", ("skipped",): "runs_skipped",
                             ("failed",): "runs_rolled_back"}),
    MetricSpec("items_total", "counter",
               "Calls handled by the reaper, by outcome: missed (ring timeout), failed (stale "
               "answered), poisoned (raised; left active and quarantined).",
               ("outcome",), {("missed",): "items_missed", ("failed",): "items_failed",
                              ("poisoned",): "items_poisoned"}),
    MetricSpec("skip_locked_total", "counter",
               "Overdue calls a cycle skipped because another transaction held them (SKIP LOCKED).",
               source={(): "skip_locked"}),
    MetricSpec("errors_total", "counter",
               "Reaper errors: poisoned calls plus failed (rolled back) cycles.",
               source={(): "errors"}),
    MetricSpec("cycle_duration_seconds", "histogram",
               "Duration of reaper cycles that held the lock (completed or failed).",
               source={(): "cycle_duration"}),
    MetricSpec("reap_lag_seconds", "histogram",
               "How long after its window each call was closed: ended_at - (started_at + "
               "ring_timeout) for Missed, ended_at - (updated_at + stale_timeout) for Failed.",
               source={(): "reap_lag"}),
    MetricSpec("active_backlog", "gauge",
               "Active calls already past their window now (configured timeouts), by reaper phase.",
               ("phase",), {("ring_timeout",): "backlog_ring_timeout",
                            ("stale_answered",): "backlog_stale_answered"}),
    MetricSpec("quarantined_calls", "gauge",
               "Poison calls parked in messenger.call_reaper_quarantine, waiting for their backoff.",
               source={(): "quarantined"}),
    MetricSpec("last_run_timestamp_seconds", "gauge",
               "Unix time the last cycle that held the lock finished; 0 if none ever did.",
               source={(): "last_run_at"}, convert=_epoch),
    MetricSpec("last_success_timestamp_seconds", "gauge",
               "Unix time the last completed cycle finished; 0 if none ever did.",
               source={(): "last_success_at"}, convert=_epoch),
    MetricSpec("polling_interval_seconds", "gauge",
               "Configured polling interval of the scheduled job (messenger.call_reaper_settings).",
               source={(): "polling_interval"}, convert=_seconds),
    MetricSpec("lock_held_seconds", "gauge",
               "How long the single-runner lock has been held by its current holder, as best "
               "known (a cycle: its transaction; another holder: since the lock warden first saw "
               "it); 0 when free.",
               source={(): "lock_held_seconds"}),
    MetricSpec("lock_warden_can_end", "gauge",
               "1 when the lock warden has seen the lock's current holder and may end it; 0 when "
               "the lock is free, no warden has seen the holder, or the holder is one it may not "
               "signal (a superuser's session).",
               source={(): "lock_warden_can_end"}, convert=_flag),
    MetricSpec("lock_ttl_seconds", "gauge",
               "Configured lock_ttl: the longest anything may hold the single-runner lock.",
               source={(): "lock_ttl"}, convert=_seconds),
    MetricSpec("job_failing", "gauge",
               "1 when the last finished run of this pg_cron job of the reaper failed (in "
               "libpq mode: could not connect), 0 when it succeeded; no sample while unknown "
               "(no run yet, no pg_cron, or a job the deploying role cannot see). The label is cron_job: "
               "job is Prometheus's own target label.",
               ("cron_job",), {("messenger-call-timeout-reaper",): "job_failing_reaper",
                               ("messenger-call-reaper-purge",): "job_failing_purge",
                               ("messenger-call-reaper-warden",): "job_failing_warden"},
               convert=_flag, optional=True),
)


def _families(row: dict | None) -> list[Metric]:
    """Metric families for one scrape; row None means the database did not answer (up 0 only)."""
    families = []
    for spec in METRICS:
        family = spec.family()
        if spec.source is None:
            family.add_metric([], 0 if row is None else 1)
        elif row is None:
            continue
        elif spec.type == "histogram":
            for labels, stem in spec.source.items():
                # The table keeps cumulative ("le") counts beside fixed bounds; +Inf is the
                # total count.
                buckets = [(floatToGoString(le), n)
                           for le, n in zip(row[stem + "_bounds"], row[stem + "_buckets"], strict=True)]
                buckets.append(("+Inf", row[stem + "_count"]))
                family.add_metric(list(labels), buckets, row[stem + "_sum"])
        else:
            for labels, column in spec.source.items():
                if spec.optional and row[column] is None:
                    continue
                family.add_metric(list(labels), spec.convert(row[column]))
        families.append(family)
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
        # Registering calls describe(); answering from the table keeps it off the database.
        for spec in METRICS:
            yield spec.family()

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
