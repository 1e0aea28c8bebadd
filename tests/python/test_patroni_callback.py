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


WAIT_S = 3  # the detached run's --wait for writes: it outlives the callback by that much


def _run(tmp_path: Path, *args: str) -> tuple[int, list[int], Path]:
    """Runs the callback; returns its exit code, the detached run's pids the moment it
    returned, and its log."""
    # A file, not a pipe: the detached run inherits it, and a pipe would keep run() waiting.
    out = tmp_path / "callback.log"
    with open(out, "ab") as log:
        rc = subprocess.run([str(CALLBACK), "--host", str(tmp_path / "no-socket-here"), "--port", "1",
                             "--wait", str(WAIT_S), "--limit", "10", *args],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, check=False,
                            timeout=30).returncode
    return rc, _our_pids(str(tmp_path)), out


@pytest.mark.parametrize("args", [
    ("on_role_change", "replica", "scope"),
    ("on_role_change", "demoted", "scope"),
    ("on_stop", "master", "scope"),
    ("on_reload", "master", "scope"),
])
def test_it_does_nothing_unless_the_node_is_primary(tmp_path, args):
    rc, detached, out = _run(tmp_path, *args)
    assert (rc, out.read_text(), detached) == (0, "", [])


@pytest.mark.parametrize("role", ["master", "primary"])
def test_on_a_new_primary_it_returns_at_once_and_its_run_is_bounded(tmp_path, role):
    rc, detached, out = _run(tmp_path, "on_role_change", role, "scope")
    assert rc == 0
    # Returned before its run ended: that run was still waiting for writes when it exited, so
    # it never held Patroni's callback slot for the run.
    assert detached, "the callback's run had ended before the callback returned: it did not detach"
    assert "event=detached" in out.read_text()
    # The detached run waits --wait for writes, gives up and exits, before --limit.
    deadline = time.monotonic() + 20
    while _our_pids(str(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _our_pids(str(tmp_path)) == []
    log = out.read_text()
    assert "event=gave_up reason=not_writable" in log
    assert log.index("event=detached") < log.index("event=gave_up")


def test_it_refuses_an_unknown_option(tmp_path):
    rc, _, out = _run(tmp_path, "--bogus", "x", "on_role_change", "master", "scope")
    assert rc == 2
    assert "unknown option --bogus" in out.read_text()
