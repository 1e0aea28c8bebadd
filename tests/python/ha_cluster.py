"""A throwaway Patroni 3.0 + etcd 3.4 cluster on 127.0.0.1 for the failover test.

Everything lives in one temp dir and on ports of its own (refused when taken), never near the
pg_virtualenv cluster the rest of the suite uses: no PG* variable reaches any process started
here. As root (CI) every process runs as the `postgres` OS user (the server refuses root), via
setpriv, which execs: the pid we hold is Patroni's own, so a kill hits Patroni and nothing else.
`close()` stops and removes everything, also after a failure half-way.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import psycopg
from reaper_facts import JOB_ROLE
from reaper_support import wait_for

ROOT = Path(__file__).resolve().parents[2]
CALLBACK = ROOT / "scripts" / "patroni-on-role-change"
PG_BIN = "/usr/lib/postgresql/15/bin"
SCOPE = "reaper-failover-test"
DB = "messenger"
SUPERUSER = "postgres"
# Most polls of a node open a connection or an HTTP request: five a second is enough.
POLL_S = 0.2


@dataclass
class Node:
    name: str
    pg_port: int
    rest_port: int
    dir: Path
    log: Path = field(init=False)
    proc: subprocess.Popen | None = None

    def __post_init__(self) -> None:
        self.log = self.dir / "pglog" / "postgresql.log"

    @property
    def data(self) -> Path:
        return self.dir / "data"

    def dsn(self, dbname: str = DB, **kw: object) -> str:
        params = {"host": "127.0.0.1", "port": self.pg_port, "dbname": dbname, "user": SUPERUSER,
                  "connect_timeout": 2, **kw}
        return " ".join(f"{k}={v}" for k, v in params.items())

    def rest(self, path: str) -> tuple[int, dict | None]:
        """GET on Patroni's REST API: (HTTP status, JSON body), (0, None) when unreachable."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.rest_port}{path}", timeout=2) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            try:
                return e.code, json.loads(e.read() or b"null")
            except ValueError:
                return e.code, None
        except (OSError, ValueError):
            return 0, None

    def postmaster_pid(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().split("\n", 1)[0])
        except (OSError, ValueError):
            return None

    def log_lines(self, pattern: str) -> list[tuple[float, str]]:
        """(epoch seconds, line) of this node's server log lines matching pattern."""
        out = []
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return out
        for line in text.splitlines():
            if re.search(pattern, line):
                m = re.match(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) UTC", line)
                if m:
                    stamp = datetime.strptime(m.group(1) + "+0000", "%Y-%m-%d %H:%M:%S.%f%z")
                    out.append((stamp.timestamp(), line))
        return out


def port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class HaCluster:
    """etcd + two Patroni nodes. Ports: etcd client/peer, then per node postgres and REST."""

    def __init__(self, *, etcd_ports: tuple[int, int], nodes: list[tuple[str, int, int]],
                 dcs: dict) -> None:
        taken = [p for p in (*etcd_ports, *(p for _, a, b in nodes for p in (a, b))) if not port_free(p)]
        if taken:
            raise RuntimeError(f"ports {taken} on 127.0.0.1 are in use; the failover test needs "
                               "them for itself and refuses to start")
        self.dir = Path(tempfile.mkdtemp(prefix="reaper-failover-"))
        self.etcd_client, self.etcd_peer = etcd_ports
        self.dcs = dcs
        self.etcd: subprocess.Popen | None = None
        self.nodes = [Node(name, pg, rest, self.dir / name) for name, pg, rest in nodes]
        self._as_root = os.geteuid() == 0
        self.os_user = "postgres" if self._as_root else pwd.getpwuid(os.geteuid()).pw_name
        # Only what the tools need: no PG* variable may point anything at another cluster.
        self.env = {"PATH": f"{PG_BIN}:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
                    "HOME": str(self.dir), "TZ": "UTC"}
        for node in self.nodes:
            (node.dir / "pglog").mkdir(parents=True)
        if self._as_root:
            pw = pwd.getpwnam("postgres")
            for path in [self.dir, *self.dir.rglob("*")]:
                os.chown(path, pw.pw_uid, pw.pw_gid)

    # ---- processes -------------------------------------------------------------------------

    def _spawn(self, argv: list[str], log: Path) -> subprocess.Popen:
        if self._as_root:
            argv = ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--", *argv]
        with open(log, "ab") as out:
            return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    env=self.env, cwd=self.dir, start_new_session=True)

    def start_etcd(self) -> None:
        client = f"http://127.0.0.1:{self.etcd_client}"
        peer = f"http://127.0.0.1:{self.etcd_peer}"
        self.etcd = self._spawn([
            "etcd", "--name", "e1", "--data-dir", str(self.dir / "etcd"),
            "--listen-client-urls", client, "--advertise-client-urls", client,
            "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
            "--initial-cluster", f"e1={peer}", "--initial-cluster-state", "new",
            "--initial-cluster-token", SCOPE, "--log-level", "warn",
        ], self.dir / "etcd.log")

        def healthy() -> bool:
            try:
                with urllib.request.urlopen(f"{client}/health", timeout=1) as r:
                    return json.loads(r.read()).get("health") == "true"
            except (OSError, ValueError):
                return False
        wait_for(healthy, 30, "etcd to answer /health", interval=POLL_S)

    def _config(self, node: Node) -> dict:
        callback = f"{CALLBACK} --host {node.dir} --port {node.pg_port}"
        return {
            "scope": SCOPE,
            "name": node.name,
            "log": {"level": "INFO"},
            "restapi": {"listen": f"127.0.0.1:{node.rest_port}", "connect_address": f"127.0.0.1:{node.rest_port}"},
            "etcd3": {"hosts": [f"127.0.0.1:{self.etcd_client}"]},
            "bootstrap": {
                "dcs": self.dcs,
                "initdb": ["data-checksums", {"encoding": "UTF8"}, {"locale": "C.UTF-8"}],
            },
            "postgresql": {
                "listen": f"127.0.0.1:{node.pg_port}",
                "connect_address": f"127.0.0.1:{node.pg_port}",
                "data_dir": str(node.data),
                "bin_dir": PG_BIN,
                "pgpass": str(node.dir / "pgpass"),
                # A spread checkpoint would keep the replica's base backup waiting for minutes.
                "basebackup": [{"checkpoint": "fast"}],
                "authentication": {
                    "superuser": {"username": SUPERUSER, "password": "failover-test"},
                    "replication": {"username": "replicator", "password": "failover-test"},
                },
                # The callback's line comes first: the job role logs in over the node's own
                # socket by peer authentication, mapped from the OS user Patroni runs as.
                "pg_hba": [
                    f"local {DB} {JOB_ROLE} peer map=call_reaper",
                    "local all all trust",
                    "host all all 127.0.0.1/32 trust",
                    "host replication replicator 127.0.0.1/32 trust",
                ],
                "pg_ident": [f"call_reaper {self.os_user} {JOB_ROLE}"],
                "callbacks": {"on_role_change": callback, "on_start": callback},
                "parameters": {
                    "unix_socket_directories": str(node.dir),
                    "logging_collector": "on",
                    "log_directory": str(node.dir / "pglog"),
                    "log_filename": "postgresql.log",
                    "log_line_prefix": "%m [%p] %b %a ",
                    # The test kills processes, never the machine: the page cache survives.
                    "fsync": "off",
                },
            },
        }

    def start(self, node: Node) -> None:
        config = node.dir / "patroni.yml"
        config.write_text(json.dumps(self._config(node), indent=1))  # JSON is YAML
        if self._as_root:
            pw = pwd.getpwnam("postgres")
            os.chown(config, pw.pw_uid, pw.pw_gid)
        node.proc = self._spawn(["patroni", str(config)], node.dir / "patroni.log")

    def kill(self, node: Node) -> None:
        """SIGKILL Patroni and the postmaster, each by its pid (a dead machine, as seen by the rest)."""
        postmaster = node.postmaster_pid()
        assert node.proc is not None and postmaster is not None
        os.kill(node.proc.pid, signal.SIGKILL)
        os.kill(postmaster, signal.SIGKILL)
        node.proc.wait(10)
        node.proc = None

    # ---- state -----------------------------------------------------------------------------

    def role(self, node: Node) -> str | None:
        status, body = node.rest("/patroni")
        if status != 200 or not body:
            return None
        return f"{body.get('role')}/{body.get('state')}"

    def is_leader(self, node: Node) -> bool:
        return node.rest("/primary")[0] == 200

    def is_streaming_replica(self, node: Node) -> bool:
        if node.rest("/replica")[0] != 200:
            return False
        for other in self.nodes:
            if other is node or not self.is_leader(other):
                continue
            try:
                with psycopg.connect(other.dsn("postgres"), autocommit=True) as conn:
                    return conn.execute(
                        "SELECT count(*) FROM pg_stat_replication WHERE application_name = %s"
                        " AND state = 'streaming'", (node.name,)).fetchone()[0] == 1
            except psycopg.Error:
                return False
        return False

    def writable(self, node: Node) -> bool:
        try:
            with psycopg.connect(node.dsn("postgres", connect_timeout=1), autocommit=True) as conn:
                return conn.execute("SELECT NOT pg_is_in_recovery()").fetchone()[0]
        except psycopg.Error:
            return False

    def tail(self, lines: int = 40) -> str:
        out = []
        for path in [self.dir / "etcd.log", *(n.dir / "patroni.log" for n in self.nodes),
                     *(n.log for n in self.nodes)]:
            try:
                text = path.read_text(errors="replace").splitlines()[-lines:]
            except OSError:
                continue
            out.append(f"---- {path.relative_to(self.dir)} (last {lines} lines)\n" + "\n".join(text))
        return "\n".join(out)

    # ---- teardown --------------------------------------------------------------------------

    def _our_pids(self) -> list[int]:
        """Processes whose command line names our temp dir: Patroni's postmasters and any
        callback still running (its psql names the node's socket directory)."""
        marker = str(self.dir).encode()
        pids = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                if marker in (entry / "cmdline").read_bytes():
                    pids.append(int(entry.name))
            except OSError:
                continue
        return pids

    def close(self) -> None:
        for node in self.nodes:
            if node.proc is not None and node.proc.poll() is None:
                node.proc.terminate()  # Patroni stops its postgres on SIGTERM
        for node in self.nodes:
            if node.proc is not None:
                try:
                    node.proc.wait(45)
                except subprocess.TimeoutExpired:
                    node.proc.kill()
                    node.proc.wait(10)
        for node in self.nodes:
            pid = node.postmaster_pid()
            if pid is not None:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        if self.etcd is not None and self.etcd.poll() is None:
            self.etcd.terminate()
            try:
                self.etcd.wait(15)
            except subprocess.TimeoutExpired:
                self.etcd.kill()
                self.etcd.wait(10)
        for _ in range(50):
            pids = self._our_pids()
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.1)
        shutil.rmtree(self.dir, ignore_errors=True)
