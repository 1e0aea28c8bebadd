"""Prometheus exporter of the call-timeout reaper.

The reaper keeps its counters and histograms in the database (messenger.call_reaper_counters),
so this process holds no state: every scrape runs ONE query,
``SELECT * FROM messenger.call_reaper_metrics()``, as the read-only role
messenger_call_reaper_monitor, and turns the row into metric families. Restarting the exporter,
or running several, changes nothing.

When the database is down, slow or refuses us, the scrape reports
``messenger_call_reaper_up 0`` (and nothing else from the database) and the process keeps
serving; the next scrape connects again. Columns are read by name: a database of an older
release, whose row lacks some, is served as it is (their samples left out, said once in the log).

The process side is that of every Prometheus exporter (docs/exporter.md): --web.listen-address,
--web.telemetry-path, --web.config.file (TLS, basic auth; call_reaper_webconfig), --log.level,
--log.format, --version, each flag also an environment variable, and *_build_info.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import re
import signal
import socket
import ssl
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from importlib import metadata
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

import psycopg
from call_reaper_dsn import mask_dsn
from call_reaper_webconfig import WebConfigError, WebConfigFile
from prometheus_client import REGISTRY, make_wsgi_app
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
    A column the row does not have (an older release's database) leaves its sample out too.
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
               "Reaper cycles, by result: completed (recorded in the run ledger), idle (on the clock, "
               "found nothing to do, no ledger row), skipped (lock busy) or failed (rolled back). "
               "The idle series is kept without WAL: it starts again after a crash or a failover, "
               "and has no sample on a standby.",
               ("result",), {("completed",): "runs_completed", ("idle",): "idle_cycles",
                             ("skipped",): "runs_skipped", ("failed",): "runs_rolled_back"},
               optional=True),
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


# Every call_reaper_metrics() column the families read.
COLUMNS = frozenset().union(*(spec.columns() for spec in METRICS))


def _families(row: dict | None) -> list[Metric]:
    """Metric families for one scrape; row None means the database did not answer (up 0 only)."""
    if row is not None and row.get("idle_cycles") is not None and row.get("runs_completed") is not None:
        # runs_completed counts every completed cycle (as 2.0.0's, whose exporter reads it);
        # result="completed" is those the ledger keeps, durable, result="idle" the rest, which
        # start again after a crash. A database without idle_cycles (2.0.0) counts its idle
        # cycles in the ledger: runs_completed as it is.
        row = {**row, "runs_completed": row["runs_completed"] - row["idle_cycles"]}
    families = []
    for spec in METRICS:
        family = spec.family()
        if spec.source is None:
            family.add_metric([], 0 if row is None else 1)
        elif row is None:
            continue
        elif spec.type == "histogram":
            for labels, stem in spec.source.items():
                if not spec.columns() <= row.keys():
                    continue
                # The table keeps cumulative ("le") counts beside fixed bounds; +Inf is the
                # total count.
                buckets = [(floatToGoString(le), n)
                           for le, n in zip(row[stem + "_bounds"], row[stem + "_buckets"], strict=True)]
                buckets.append(("+Inf", row[stem + "_count"]))
                family.add_metric(list(labels), buckets, row[stem + "_sum"])
        else:
            for labels, column in spec.source.items():
                if column not in row or (spec.optional and row[column] is None):
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
        self._missing: list[str] = []

    def describe(self) -> Iterator[Metric]:
        # Registering calls describe(); answering from the table keeps it off the database.
        yield build_info()
        for spec in METRICS:
            yield spec.family()

    def collect(self) -> Iterator[Metric]:
        # build_info first: it is there whether or not the database answers.
        yield build_info()
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
            self._report_missing(sorted(COLUMNS - row.keys()))
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
            # Never a prepared statement: an upgrade gives call_reaper_metrics() another row type,
            # and a prepared scrape would then fail once ("cached plan must not change result
            # type"); one short query per scrape gains nothing from preparing.
            prepare_threshold=None,
        )
        try:
            conn.execute("SELECT pg_catalog.set_config('statement_timeout', %s, false)",
                         [str(int(self._statement_timeout * 1000))])
        except psycopg.Error:
            conn.close()
            raise
        info = conn.info
        log.info("connected to the database", extra={"fields": {
            "host": info.host, "port": info.port, "dbname": info.dbname, "user": info.user,
            "backend_pid": info.backend_pid}})
        return conn

    def _report_missing(self, missing: list[str]) -> None:
        # Once per change, not per scrape: the database stays as it is until its next deploy.
        if missing and missing != self._missing:
            log.warning("messenger.call_reaper_metrics() has no column %s: a reaper release older "
                        "than this exporter; their samples are left out until it is upgraded",
                        ", ".join(missing))
        self._missing = missing

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


# ---- Build info --------------------------------------------------------------------------------

DISTRIBUTION = "call-timeout-reaper-exporter"
REVISION_ENV = "CALL_REAPER_EXPORTER_REVISION"


def _version() -> str:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "unknown"  # run from a source tree that was never installed


def _revision() -> str:
    """The git commit this copy was built from, else "unknown".

    pip records the commit of a `pip install git+https://...@<commit>` in the installation's
    direct_url.json (PEP 610); an image or package built from a checkout passes it in
    CALL_REAPER_EXPORTER_REVISION (docs/exporter.md), which wins.
    """
    if os.environ.get(REVISION_ENV):
        return os.environ[REVISION_ENV]
    try:
        direct = json.loads(metadata.distribution(DISTRIBUTION).read_text("direct_url.json")
                            or "{}")
    except (metadata.PackageNotFoundError, ValueError):
        return "unknown"
    return (direct.get("vcs_info") or {}).get("commit_id") or "unknown"


BUILD = {"version": _version(), "revision": _revision(),
         "pythonversion": platform.python_version()}


def build_info() -> Metric:
    family = GaugeMetricFamily(PREFIX + "build_info",
                               "A metric with a constant '1' value labeled by version, revision "
                               "and pythonversion from which call-reaper-exporter was built.",
                               labels=list(BUILD))
    family.add_metric(list(BUILD.values()), 1)
    return family


# ---- Logs: logfmt or JSON, one line per event --------------------------------------------------

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING,
           "error": logging.ERROR}
_LEVEL_NAMES = {logging.DEBUG: "debug", logging.INFO: "info", logging.WARNING: "warn",
                logging.ERROR: "error", logging.CRITICAL: "error"}


class _Formatter(logging.Formatter):
    """ts, level, caller, msg, then the record's ``fields`` (extra={"fields": {...}})."""

    def __init__(self, style: str):
        super().__init__()
        self._json = style == "json"

    def format(self, record: logging.LogRecord) -> str:
        ts = datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")
        entry = {"ts": ts.replace("+00:00", "Z"),
                 "level": _LEVEL_NAMES.get(record.levelno, record.levelname.lower()),
                 "caller": f"{record.module}.py:{record.lineno}",
                 "msg": record.getMessage(), **getattr(record, "fields", {})}
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        if self._json:
            return json.dumps(entry, default=str, ensure_ascii=False)
        return " ".join(f"{key}={_logfmt_value(value)}" for key, value in entry.items())


def _logfmt_value(value: Any) -> str:
    text = str(value).lower() if isinstance(value, bool) else str(value)
    if text and not any(c in text for c in ' ="\\') and text.isprintable():
        return text
    return json.dumps(text, ensure_ascii=False)


def setup_logging(level: str, style: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Formatter(style))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(_LEVELS[level])


# ---- Command line: the flags every Prometheus exporter shares, each also an environment variable

DEFAULT_PORT = 9648
ENV_PREFIX = "CALL_REAPER_EXPORTER_"


@dataclass(frozen=True)
class Flag:
    name: str
    env: str
    default: str
    help: str
    metavar: str | None = None
    choices: tuple[str, ...] = ()

    @property
    def dest(self) -> str:
        return self.name[2:].replace(".", "_").replace("-", "_")


# One table drives argparse, the environment and `--help`; docs/exporter.md lists the same.
FLAGS: tuple[Flag, ...] = (
    Flag("--web.listen-address", ENV_PREFIX + "WEB_LISTEN_ADDRESS", f":{DEFAULT_PORT}",
         "address to serve on, host:port ([v6]:port; :port = every interface; port 0 = any "
         "free port)", "ADDRESS"),
    Flag("--web.telemetry-path", ENV_PREFIX + "WEB_TELEMETRY_PATH", "/metrics",
         "path under which to expose the metrics", "PATH"),
    Flag("--web.config.file", ENV_PREFIX + "WEB_CONFIG_FILE", "",
         "exporter-toolkit web config (TLS, basic auth), read again for every connection and "
         "request (docs/exporter.md); empty: plain HTTP, no auth", "FILE"),
    Flag("--dsn", "DATABASE_URL", "",
         "libpq connection string or URL of the messenger database, as the role "
         "messenger_call_reaper_monitor; empty: the libpq PG* variables (PGHOST, PGPORT, "
         "PGUSER, PGPASSWORD or ~/.pgpass, PGDATABASE)", "DSN"),
    Flag("--connect-timeout", ENV_PREFIX + "CONNECT_TIMEOUT", "5",
         "give up connecting after this long; the scrape reports up 0", "SECONDS"),
    Flag("--statement-timeout", ENV_PREFIX + "STATEMENT_TIMEOUT", "5",
         "server-side limit on the scrape query", "SECONDS"),
    Flag("--log.level", ENV_PREFIX + "LOG_LEVEL", "info", "only log messages of this "
         "severity or above", "LEVEL", tuple(_LEVELS)),
    Flag("--log.format", ENV_PREFIX + "LOG_FORMAT", "logfmt", "log line format", "FORMAT",
         ("logfmt", "json")),
)
# 1.x flags: refused with the name of their replacement rather than half-honoured (--port and
# --listen-address are now one flag).
REMOVED_FLAGS = {"--port": "--web.listen-address=:PORT",
                 "--listen-address": "--web.listen-address=ADDRESS:PORT",
                 "--log-level": "--log.level"}


class _Removed(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        parser.error(f"{option_string} was removed in version 2.0.0: use "
                     f"{REMOVED_FLAGS[option_string]}")


def version_text() -> str:
    return (f"call-reaper-exporter, version {BUILD['version']} (revision: {BUILD['revision']}, "
            f"python: {BUILD['pythonversion']})")


def parse_listen_address(value: str) -> tuple[str, int]:
    """(host, port) of host:port, [v6]:port or :port; host "" means every interface."""
    found = re.fullmatch(r"(\[[0-9A-Fa-f:.%\w]+\]|[^:\[\]]*):(\d{1,5})", value)
    if not found or int(found.group(2)) > 65535:
        raise ValueError(f"--web.listen-address {value!r} is not host:port, [ipv6]:port or "
                         ":port (port 0-65535)")
    return found.group(1).strip("[]"), int(found.group(2))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="call-reaper-exporter", allow_abbrev=False,
        description="Serve the call-timeout reaper's metrics (kept in PostgreSQL) to Prometheus. "
                    "Every flag can also be set by the environment variable named in its help; "
                    "the flag wins.")
    for flag in FLAGS:
        shown = f"'{flag.default}'" if flag.default else "empty"
        parser.add_argument(flag.name, dest=flag.dest,
                            default=os.environ.get(flag.env, flag.default), metavar=flag.metavar,
                            help=f"{flag.help} (env {flag.env}; default {shown}"
                                 + (f"; one of {', '.join(flag.choices)}" if flag.choices else "")
                                 + ")")
    parser.add_argument("--version", action="version", version=version_text())
    for old in REMOVED_FLAGS:
        parser.add_argument(old, action=_Removed, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    for flag in FLAGS:
        value = getattr(args, flag.dest)
        if flag.choices and value not in flag.choices:
            parser.error(f"{flag.name} (or {flag.env}) {value!r}: choose one of "
                         f"{', '.join(flag.choices)}")
    try:
        args.host, args.port = parse_listen_address(args.web_listen_address)
    except ValueError as exc:
        parser.error(str(exc))
    if not args.web_telemetry_path.startswith("/") or args.web_telemetry_path == "/":
        parser.error(f"--web.telemetry-path {args.web_telemetry_path!r} must start with / and "
                     "name a path other than / (the landing page)")
    try:
        args.connect_timeout = float(args.connect_timeout)
        args.statement_timeout = float(args.statement_timeout)
    except ValueError:
        parser.error("--connect-timeout and --statement-timeout take seconds (a number)")
    if not (0 < args.connect_timeout < 3600 and 0 < args.statement_timeout < 3600):
        parser.error("--connect-timeout and --statement-timeout must be positive (under an hour)")
    try:
        args.masked_dsn = mask_dsn(args.dsn)
    except psycopg.ProgrammingError:
        # A malformed DSN is a configuration error, not an outage: refuse to start. libpq's
        # message quotes the token it choked on, which may be the password: not repeated here.
        parser.error("--dsn (or DATABASE_URL) is not a valid libpq connection string or URL")
    args.web_config = None
    if args.web_config_file:
        args.web_config = WebConfigFile(args.web_config_file)
        try:
            args.web_tls = args.web_config.check().tls is not None
        except WebConfigError as exc:
            parser.error(f"--web.config.file: {exc}")
    else:
        args.web_tls = False
    return args


# ---- HTTP(S) server ----------------------------------------------------------------------------

LANDING_PAGE = """<!DOCTYPE html>
<html><head><title>call-reaper-exporter</title></head>
<body><h1>call-reaper-exporter</h1><p>Version {version}</p>
<p><a href="{path}">Metrics</a></p></body></html>
"""


def make_app(registry: Collector, telemetry_path: str, web_config: WebConfigFile | None):
    """The WSGI app: basic auth (when configured) in front of every path, as exporter-toolkit."""
    metrics = make_wsgi_app(registry)
    landing = LANDING_PAGE.format(version=BUILD["version"], path=telemetry_path).encode()

    def reply(start_response, status: str, body: bytes, headers=()):
        start_response(status, [("Content-Type", "text/plain; charset=utf-8"), *headers])
        return [body]

    def app(environ, start_response):
        if web_config is not None:
            try:
                config = web_config.load()
            except WebConfigError as exc:
                log.error("web config unusable, refusing the request", extra={"fields": {
                    "err": str(exc)}})
                return reply(start_response, "500 Internal Server Error",
                             b"web config file unusable, see the exporter's log\n")
            if not web_config.authorized(config, environ.get("HTTP_AUTHORIZATION")):
                log.debug("unauthorized request", extra={"fields": {
                    "remote": environ.get("REMOTE_ADDR"), "path": environ.get("PATH_INFO")}})
                return reply(start_response, "401 Unauthorized", b"Unauthorized\n",
                             [("WWW-Authenticate", 'Basic realm="call-reaper-exporter"')])
        path = environ.get("PATH_INFO") or "/"
        if path == telemetry_path:
            return metrics(environ, start_response)
        if path == "/":
            start_response("200 OK", [("Content-Type", "text/html; charset=utf-8")])
            return [landing]
        return reply(start_response, "404 Not Found", b"Not Found\n")

    return app


class _Handler(WSGIRequestHandler):
    # Bounds a client that connects and never finishes its TLS handshake or request.
    timeout = 30

    def log_message(self, format, *args):
        log.debug("request", extra={"fields": {"remote": self.client_address[0],
                                               "line": format % args}})


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    web_config: WebConfigFile | None = None
    tls = False

    def server_bind(self) -> None:
        if self.address_family == socket.AF_INET6:
            # ":port" means every interface, IPv4 too, as Go's net.Listen does.
            self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()

    def process_request_thread(self, request, client_address):
        # TLS is set up here, in the connection's own thread, with the certificate as the web
        # config names it now: a slow handshake holds up nobody else, and a renewed
        # certificate is served from the next connection on.
        try:
            if self.tls:
                context = self.web_config.load().tls.context()
                request = context.wrap_socket(request, server_side=True,
                                              do_handshake_on_connect=False)
            self.finish_request(request, client_address)
        except WebConfigError as exc:
            log.error("web config unusable, closing the connection",
                      extra={"fields": {"err": str(exc)}})
        except (OSError, ssl.SSLError) as exc:
            # Handshake failures (a wrong client certificate, plain HTTP to the TLS port) and
            # resets: the client's problem, not the exporter's.
            log.debug("connection failed", extra={"fields": {
                "remote": client_address[0], "err": str(exc)}})
        finally:
            self.shutdown_request(request)


def serve(args: argparse.Namespace, registry: Collector) -> _Server:
    host = args.host
    family = socket.AF_INET6 if ":" in host or (host == "" and socket.has_ipv6) else socket.AF_INET
    server_class = type("Server", (_Server,), {"address_family": family,
                                              "web_config": args.web_config,
                                              "tls": args.web_tls})
    bind = host or ("::" if family == socket.AF_INET6 else "0.0.0.0")
    server = server_class((bind, args.port), _Handler)
    server.set_app(make_app(registry, args.web_telemetry_path, args.web_config))
    threading.Thread(target=server.serve_forever, name="http", daemon=True).start()
    return server


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    setup_logging(args.log_level, args.log_format)
    log.info("starting call-reaper-exporter", extra={"fields": BUILD})
    collector = ReaperCollector(args.dsn, args.connect_timeout, args.statement_timeout)
    REGISTRY.register(collector)
    try:
        server = serve(args, REGISTRY)
    except OSError as exc:
        log.error("cannot listen", extra={"fields": {"address": args.web_listen_address,
                                                     "err": exc.strerror or str(exc)}})
        return 1
    host, port = server.server_address[:2]
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    log.info("listening", extra={"fields": {
        "address": address, "telemetry_path": args.web_telemetry_path, "tls": args.web_tls,
        "basic_auth": bool(args.web_config and args.web_config.load().users),
        "dsn": args.masked_dsn}})

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        while not stop.wait(3600):
            pass
    except KeyboardInterrupt:
        pass
    server.shutdown()
    server.server_close()
    collector.close()
    log.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
