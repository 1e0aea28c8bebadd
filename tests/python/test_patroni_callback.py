"""scripts/patroni-on-role-change on its own (test_failover.py shows it working inside Patroni):
it acts only for a primary, returns at once so it never holds Patroni's callback slot, and its
detached run ends by itself when the node never becomes writable. No server needed: the socket
directory it is pointed at does not exist."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from ha_cluster import CALLBACK


def _our_pids(marker: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def _run(tmp_path: Path, *args: str) -> tuple[int, float, Path]:
    # A file, not a pipe: the detached run inherits it, and a pipe would keep run() waiting.
    out = tmp_path / "callback.log"
    started = time.monotonic()
    with open(out, "ab") as log:
        rc = subprocess.run([str(CALLBACK), "--host", str(tmp_path / "no-socket-here"), "--port", "1",
                             "--wait", "1", "--limit", "5", *args],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, check=False,
                            timeout=30).returncode
    return rc, time.monotonic() - started, out


@pytest.mark.parametrize("args", [
    ("on_role_change", "replica", "scope"),
    ("on_role_change", "demoted", "scope"),
    ("on_stop", "master", "scope"),
    ("on_reload", "master", "scope"),
])
def test_it_does_nothing_unless_the_node_is_primary(tmp_path, args):
    rc, _, out = _run(tmp_path, *args)
    assert (rc, out.read_text()) == (0, "")
    assert _our_pids(str(tmp_path)) == []


@pytest.mark.parametrize("role", ["master", "primary"])
def test_on_a_new_primary_it_returns_at_once_and_its_run_is_bounded(tmp_path, role):
    rc, took, out = _run(tmp_path, "on_role_change", role, "scope")
    assert rc == 0
    assert took < 1.0, f"the callback held Patroni's callback slot for {took:.1f} s"
    assert "event=detached" in out.read_text()
    # The detached run waits --wait (1 s) for writes, gives up and exits, well before --limit.
    deadline = time.monotonic() + 10
    while _our_pids(str(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _our_pids(str(tmp_path)) == []
    assert "event=gave_up reason=not_writable" in out.read_text()


def test_it_refuses_an_unknown_option(tmp_path):
    rc, _, out = _run(tmp_path, "--bogus", "x", "on_role_change", "master", "scope")
    assert rc == 2
    assert "unknown option --bogus" in out.read_text()
