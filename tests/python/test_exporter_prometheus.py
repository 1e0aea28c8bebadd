"""A real Prometheus server (Debian's /usr/bin/prometheus, loopback only) scrapes the exporter
every second, ingests every published metric with the database's values, evaluates every dashboard
query without error and loads the alert rules healthy. Bounded to about 30 s."""

from __future__ import annotations

import json
import re
import secrets
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from datetime import UTC, datetime, timedelta
from importlib import metadata

import pytest
from call_reaper_exporter import PREFIX
from exporter_support import (
    REPO,
    bcrypt_hash,
    dashboard_queries,
    make_certificates,
    run_totals,
)
from reaper_support import reap

P = PREFIX
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
DEADLINE = 30


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Prometheus:
    def __init__(self, tmp_path, target: str | None = None, scrape_configs: list | None = None):
        self.port = free_port()
        config = tmp_path / "prometheus.yml"
        config.write_text(json.dumps({  # JSON is YAML
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(REPO / "monitoring" / "alerts.yml")],
            "scrape_configs": scrape_configs or [{"job_name": "call-reaper",
                                                  "static_configs": [{"targets": [target]}]}],
        }))
        self.log = tmp_path / "prometheus.log"
        with self.log.open("w") as log:
            self.proc = subprocess.Popen(
                [PROMETHEUS, f"--config.file={config}",
                 f"--storage.tsdb.path={tmp_path / 'data'}",
                 f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
                stdout=log, stderr=subprocess.STDOUT)
        self.base = f"http://127.0.0.1:{self.port}"

    def get(self, path: str, **params) -> dict:
        url = self.base + path + ("?" + urllib.parse.urlencode(params) if params else "")
        with urllib.request.urlopen(url, timeout=5) as response:
            return json.loads(response.read())

    def query(self, expr: str) -> list[dict]:
        body = self.get("/api/v1/query", query=expr)
        assert body["status"] == "success", (expr, body)
        return body["data"]["result"]

    def value(self, expr: str) -> float:
        [series] = self.query(expr)
        return float(series["value"][1])

    def wait(self, what: str, check, deadline: float):
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"prometheus exited:\n{self.log.read_text()}"
            try:
                if check():
                    return
            except (OSError, ValueError, KeyError, IndexError, AssertionError):
                pass
            time.sleep(0.25)
        pytest.fail(f"prometheus: {what} not reached in time\n{self.log.read_text()}",
                    pytrace=False)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def prometheus(tmp_path, start_exporter, monitor_dsn):
    exporter = start_exporter("--dsn", monitor_dsn)
    server = Prometheus(tmp_path, f"127.0.0.1:{exporter.port}")
    yield server
    server.stop()


def test_prometheus_ingests_every_published_metric(conn, prometheus, reaper_paused):
    deadline = time.monotonic() + DEADLINE
    # Real cycles that close real calls (far in the future, so the paused job never sees them):
    # no counter or histogram is trivially zero when Prometheus reads it.
    start = datetime(2100, 1, 1, tzinfo=UTC)
    conn.execute(
        "INSERT INTO messenger.call_sessions (call_id, caller_user_id, callee_user_id, media_type,"
        " status, started_at, updated_at) SELECT gen_random_uuid(), gen_random_uuid(),"
        " gen_random_uuid(), 'Audio', 'Ringing', %s, %s FROM generate_series(1, 2)", [start, start])
    closed = reap(conn, as_of=start + timedelta(seconds=50), batch_size=10000)
    assert closed["missed_count"] >= 2
    prometheus.wait("ready", lambda: urllib.request.urlopen(
        prometheus.base + "/-/ready", timeout=2).status == 200, deadline)
    # A scrape after the cycle above, and a few more so rate() has samples to work with.
    prometheus.wait("3 scrapes with up 1", lambda: len(prometheus.query(
        f'{P}up[10s]')[0]["values"]) >= 3 and prometheus.value(f"{P}up") == 1, deadline)
    assert prometheus.value('up{job="call-reaper"}') == 1

    cur = conn.execute("SELECT * FROM messenger.call_reaper_metrics()")
    row = dict(zip([c.name for c in cur.description], cur.fetchone(), strict=True))
    expected = {
        **{f'{P}run_total{{result="{r}"}}': value for r, value in run_totals(row).items()},
        **{f'{P}items_total{{outcome="{o}"}}': row["items_" + o]
           for o in ("missed", "failed", "poisoned")},
        f"{P}skip_locked_total": row["skip_locked"],
        f"{P}errors_total": row["errors"],
        f'{P}active_backlog{{phase="ring_timeout"}}': row["backlog_ring_timeout"],
        f'{P}active_backlog{{phase="stale_answered"}}': row["backlog_stale_answered"],
        f"{P}cycle_duration_seconds_count": row["cycle_duration_count"],
        f'{P}cycle_duration_seconds_bucket{{le="+Inf"}}': row["cycle_duration_count"],
        f"{P}cycle_duration_seconds_sum": row["cycle_duration_sum"],
        f"{P}reap_lag_seconds_count": row["reap_lag_count"],
        f'{P}reap_lag_seconds_bucket{{le="+Inf"}}': row["reap_lag_count"],
        f"{P}reap_lag_seconds_sum": row["reap_lag_sum"],
        f"{P}last_success_timestamp_seconds": row["last_success_at"].timestamp(),
        f"{P}last_run_timestamp_seconds": row["last_run_at"].timestamp(),
        f"{P}polling_interval_seconds": row["polling_interval"].total_seconds(),
        f"{P}lock_ttl_seconds": row["lock_ttl"].total_seconds(),
        f"{P}quarantined_calls": row["quarantined"],
        f"{P}up": 1,
    }
    got = {expr: prometheus.value(expr) for expr in expected}
    assert got == pytest.approx({k: float(v) for k, v in expected.items()}, rel=0, abs=1e-6)
    assert got[f'{P}run_total{{result="completed"}}'] >= 1
    assert got[f'{P}items_total{{outcome="missed"}}'] >= 2
    assert got[f"{P}reap_lag_seconds_count"] >= 2
    assert len(prometheus.query(f"{P}cycle_duration_seconds_bucket")) == len(
        row["cycle_duration_bounds"]) + 1
    assert len(prometheus.query(f"{P}reap_lag_seconds_bucket")) == len(
        row["reap_lag_bounds"]) + 1

    # Every dashboard query is valid PromQL over these series (Grafana's variables filled in).
    for query in dashboard_queries():
        if query.startswith("label_values("):
            continue
        expr = (query.replace("$instance", ".*").replace("$job", ".*")
                .replace("$__rate_interval", "10s"))
        prometheus.query(expr)
    assert prometheus.query(f'{P}active_backlog{{instance=~".*"}}')

    # The alert rules load, and every one evaluates without error against the real series.
    def rules_evaluated():
        groups = prometheus.get("/api/v1/rules")["data"]["groups"]
        rules = [r for g in groups for r in g["rules"]]
        return rules and all(r["health"] == "ok" and not r["lastEvaluation"].startswith("0001")
                             for r in rules), rules
    prometheus.wait("alert rules evaluated", lambda: rules_evaluated()[0], deadline)
    names = sorted(r["name"] for r in rules_evaluated()[1])
    assert names == sorted(re.findall(r"- alert: (\w+)", (REPO / "monitoring" /
                                                         "alerts.yml").read_text()))


def test_prometheus_scrapes_over_https_with_basic_auth(tmp_path, start_exporter, monitor_dsn):
    """Debian's Prometheus against --web.config.file: the right password over verified TLS
    ingests the metrics; a wrong one is refused with 401 and ingests none."""
    deadline = time.monotonic() + DEADLINE
    certs = make_certificates(tmp_path)
    password = secrets.token_urlsafe(16)
    web = tmp_path / "web.yml"
    web.write_text(f"tls_server_config:\n  cert_file: {certs['server.crt']}\n"
                   f"  key_file: {certs['server.key']}\n"
                   f"basic_auth_users:\n  prometheus: {bcrypt_hash(password)}\n")
    exporter = start_exporter("--dsn", monitor_dsn, "--web.config.file", str(web))
    assert exporter.url.startswith("https://")
    jobs = []
    for job, secret in (("call-reaper", password), ("call-reaper-wrong-password", "wrong")):
        (tmp_path / job).write_text(secret)
        jobs.append({"job_name": job, "scheme": "https",
                     "tls_config": {"ca_file": str(certs["ca"])},
                     "basic_auth": {"username": "prometheus", "password_file": str(tmp_path / job)},
                     "static_configs": [{"targets": [f"127.0.0.1:{exporter.port}"]}]})
    server = Prometheus(tmp_path, scrape_configs=jobs)
    try:
        server.wait("scraped over HTTPS with up 1", lambda: server.value(
            f'{P}up{{job="call-reaper"}}') == 1, deadline)
        assert server.value('up{job="call-reaper"}') == 1
        assert server.value(f'{P}build_info{{job="call-reaper", version="{metadata.version("call-timeout-reaper-exporter")}"}}') == 1

        def refused():
            [target] = [t for t in server.get("/api/v1/targets")["data"]["activeTargets"]
                        if t["labels"]["job"] == "call-reaper-wrong-password"]
            return target["health"] == "down" and "401" in target["lastError"]
        server.wait("the wrong password refused with 401", refused, deadline)
        assert server.value('up{job="call-reaper-wrong-password"}') == 0
        assert server.query('{job="call-reaper-wrong-password", __name__=~"messenger_.*"}') == []
    finally:
        server.stop()
