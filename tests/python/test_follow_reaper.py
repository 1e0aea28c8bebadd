"""`make run`'s follow-reaper shows a line for every cycle: one that closed calls from its ledger
row, and one that found nothing to do, which leaves no ledger row, from the idle count
(call_reaper_metrics().idle_cycles, call_reaper_status().last_idle_cycle_at)."""

from __future__ import annotations

import os
import select
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from reaper_support import ringing

ROOT = Path(__file__).resolve().parents[2]


def read_line(process: subprocess.Popen, seconds: float) -> str:
    ready, _, _ = select.select([process.stdout], [], [], seconds)
    assert ready, f"follow-reaper printed nothing for {seconds} s"
    return process.stdout.readline()


def test_follow_reaper_prints_idle_and_busy_cycles(conn, reaper_paused, calls, dsn):
    env = {**os.environ, **({"DATABASE_URL": dsn} if dsn else {})}
    follower = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "follow-reaper")],
                                stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert read_line(follower, 10).split()[:2] == ["time", "result"]
        # A DBA's cycle on the clock runs while the job is paused; with nothing due it is idle.
        missed, failed = conn.execute(
            "SELECT missed_count, failed_count FROM messenger.reap_call_timeouts()").fetchone()
        assert (missed, failed) == (0, 0), "a due call was left by another test"
        assert read_line(follower, 5).split()[1:7] == ["idle", "0", "0", "0", "0", "0"]
        calls.add([ringing(datetime.now(UTC) - timedelta(minutes=5))])
        conn.execute("SELECT * FROM messenger.reap_call_timeouts()")
        assert read_line(follower, 5).split()[1:3] == ["completed", "1"]
    finally:
        follower.terminate()
        follower.wait(10)
