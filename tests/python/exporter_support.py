"""Helpers for the exporter tests: flat sample maps of one scrape (collector or HTTP), one
reaper cycle, and the exporter as a real process."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import threading
import urllib.request
from base64 import b64encode
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector
from reaper_support import wait_for

REPO = Path(__file__).resolve().parents[2]
DASHBOARD = REPO / "monitoring" / "grafana-dashboard.json"
Samples = dict[tuple[str, frozenset], float]


def run_totals(row: dict) -> dict[str, float | None]:
    """The published run_total{result} label values and each one's value from a
    call_reaper_metrics() row: result="failed" is a cycle that rolled back (docs/operations.md,
    "Words"); result="idle" a cycle on the clock that found nothing to do (no ledger row, an
    unlogged count), which runs_completed includes (every completed cycle, as in 2.0.0)."""
    idle = row.get("idle_cycles")
    return {"completed": row["runs_completed"] - (idle or 0), "idle": idle,
            "skipped": row["runs_skipped"], "failed": row["runs_rolled_back"]}


def samples_of(families) -> Samples:
    """{(sample name, frozenset of labels): value} of every sample in the families."""
    return {(s.name, frozenset(s.labels.items())): s.value for f in families for s in f.samples}


class _Frozen(Collector):
    def __init__(self, families: list) -> None:
        self._families = families

    def collect(self):
        return self._families


def snapshot(families) -> CollectorRegistry:
    """A registry that serves these families as they are: reading it queries nothing again, so
    two snapshots taken around a reaper cycle can be compared value by value."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Frozen(list(families)))
    return registry


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)


def collect_once(collector) -> CollectorRegistry:
    """One scrape of the collector (one query) through a registry that describes it first, as
    the exporter's own does, frozen for get_sample_value."""
    registry = CollectorRegistry(auto_describe=True)
    registry.register(collector)
    return snapshot(registry.collect())


class Exporter:
    """call-reaper-exporter running as its own process, on a loopback port it picked; over
    HTTPS when its --web.config.file turns TLS on (its start line says so)."""

    def __init__(self, *args: str, env: dict[str, str] | None = None,
                 command: list[str] | None = None):
        """command: what to run instead of the installed script (another release's exporter)."""
        script = Path(sys.executable).with_name("call-reaper-exporter")
        if command is None and not script.exists():
            pytest.fail(f"{script} missing: `make deps` installs the exporter package",
                        pytrace=False)
        # Never an inherited DATABASE_URL: each test says where the exporter connects.
        env = {**{k: v for k, v in os.environ.items() if k != "DATABASE_URL"}, **(env or {})}
        self.proc = subprocess.Popen(
            [*(command or [str(script)]), "--web.listen-address", "127.0.0.1:0", *args],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        # The start line, logfmt or JSON: msg listening, address, telemetry_path, tls.
        found = self.wait_for_log(r'\bmsg"?[=:] ?"?listening"?,? "?address"?[=:] ?"?127\.0\.0\.1:'
                                  r'(\d+)"?,? "?telemetry_path"?[=:] ?"?([^"\s]+)"?,? "?tls"?[=:] ?'
                                  r'(true|false)', timeout=15)
        self.port = int(found.group(1))
        scheme = "https" if found.group(3) == "true" else "http"
        self.url = f"{scheme}://127.0.0.1:{self.port}{found.group(2)}"

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.lines.append(line)

    @property
    def log(self) -> str:
        return "".join(self.lines)

    def wait_for_log(self, pattern: str, timeout: float) -> re.Match:
        """The first match of pattern in the log; the failure shows the whole log, and comes at
        once when the exporter has exited, since the line can no longer come."""
        def logged() -> re.Match | None:
            found = re.search(pattern, self.log)
            if not found and self.proc.poll() is not None:
                pytest.fail(f"exporter exited ({self.proc.poll()}) without logging /{pattern}/:\n"
                            f"{self.log}", pytrace=False)
            return found
        try:
            return wait_for(logged, timeout, f"the exporter to log /{pattern}/")
        except AssertionError as timed_out:
            pytest.fail(f"{timed_out}:\n{self.log}", pytrace=False)

    def get(self, url: str | None = None, auth: tuple[str, str] | None = None,
            cafile: Path | None = None, timeout: float = 10):
        """One GET (of the metrics by default): the open response; HTTPError for 4xx/5xx."""
        request = urllib.request.Request(url or self.url)
        if auth:
            request.add_header("Authorization",
                               "Basic " + b64encode(":".join(auth).encode()).decode())
        context = ssl.create_default_context(cafile=str(cafile)) if cafile else None
        return urllib.request.urlopen(request, timeout=timeout, context=context)

    def scrape(self, timeout: float = 10, **get) -> tuple[CollectorRegistry, dict[str, str]]:
        """One GET /metrics: (the parsed families frozen for get_sample_value, {family: type})."""
        with self.get(timeout=timeout, **get) as response:
            assert response.status == 200
            families = list(text_string_to_metric_families(response.read().decode()))
        return snapshot(families), {f.name: f.type for f in families}

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(timeout=5)
        return self.proc.returncode


def dashboard_queries() -> list[str]:
    """Every PromQL string in the dashboard: panel targets and template variable queries (a
    constant variable's "query" is its value, no PromQL: the runbook page)."""
    found: list[str] = []

    def walk(node):
        if isinstance(node, dict) and node.get("type") == "constant":
            return
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("expr", "query", "definition") and isinstance(value, str):
                    found.append(value)
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(json.loads(DASHBOARD.read_text()))
    return found


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_certificates(directory: Path) -> dict[str, Path]:
    """A throwaway CA and a server certificate for 127.0.0.1 signed by it (openssl), plus a
    client certificate from the same CA: {"ca", "server.crt", "server.key", "client.crt",
    "client.key"} -> paths."""
    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=test CA",
            "-keyout", "ca.key", "-out", "ca.crt")
    for name, extension in (("server", "subjectAltName=IP:127.0.0.1"),
                            ("client", "extendedKeyUsage=clientAuth")):
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}",
                "-keyout", f"{name}.key", "-out", f"{name}.csr")
        (directory / f"{name}.ext").write_text(extension + "\n")
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                "-CAcreateserial", "-days", "1", "-extfile", f"{name}.ext", "-out", f"{name}.crt")
    return {"ca": directory / "ca.crt", **{f"{n}.{e}": directory / f"{n}.{e}"
                                           for n in ("server", "client") for e in ("crt", "key")}}


def bcrypt_hash(password: str) -> str:
    """A hash for basic_auth_users; htpasswd -B writes $2y$, the form exporter-toolkit shows."""
    import bcrypt

    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(4)).decode().replace("$2b$", "$2y$")
