"""The reaper scheduled from outside: scripts/reaper-loop, the application-side loop the README
shows, run twice at once against a database without pg_cron (deployed with --set
scheduler=none) closes every due call within the SLO, once.

Real time, like test_slo.py: calls become due while the loops run. The polling interval is 2 s
here (a setting; the loop re-reads it), so the SLO is ring_timeout + 2 s. Both loops tick on the
same wall-clock instants: at each tick one takes the single-runner lock and the other's run is
skipped (counted in the ledger), never waiting.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psycopg
from adoption_support import ROOT, create_product_database, sqitch

INTERVAL_S = 2
SLACK_S = 1.0   # process start, connection, the cycle's own milliseconds


def test_two_loops_close_every_due_call_once_within_the_slo(conn):
    db = "loop_nocron"
    dsn = create_product_database(conn, db, "text")
    sqitch("deploy", db, "--set", "scheduler=none")
    with psycopg.connect(dsn, autocommit=True) as product:
        product.execute(f"UPDATE messenger.call_reaper_settings SET polling_interval = '{INTERVAL_S} seconds'")
        ring_timeout = product.execute(
            "SELECT extract(epoch FROM ring_timeout) FROM messenger.call_reaper_settings").fetchone()[0]
        env = {**os.environ, "PGDATABASE": db}
        loops = [subprocess.Popen([sys.executable, str(ROOT / "scripts" / "reaper-loop")], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(2)]
        try:
            # 8 waves of 5 calls, each wave due 1 s after it is inserted.
            for _ in range(8):
                product.execute(f"""
                    INSERT INTO messenger.call_sessions
                           (call_id, caller_user_id, callee_user_id, media_type, status, started_at, updated_at)
                    SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing',
                           clock_timestamp() - interval '{ring_timeout - 1} seconds', clock_timestamp()
                      FROM generate_series(1, 5)""")
                time.sleep(1.3)
            deadline = time.monotonic() + 3 * INTERVAL_S + 5
            while time.monotonic() < deadline and product.execute(
                    "SELECT count(*) FROM messenger.call_sessions WHERE status = 'Ringing'").fetchone()[0]:
                time.sleep(0.2)
        finally:
            for loop in loops:
                loop.send_signal(signal.SIGTERM)
            outputs = [loop.communicate(timeout=3 * INTERVAL_S + 5) for loop in loops]
        for loop, (out, err) in zip(loops, outputs):
            assert loop.returncode == 0, err
            assert "run_id=" in out, f"a loop ran no cycle: {out}{err}"

        closed = product.execute(f"""
            SELECT count(*), max(extract(epoch FROM ended_at - (started_at + interval '{ring_timeout} seconds')))
              FROM messenger.call_sessions WHERE status = 'Missed'""").fetchone()
        assert closed[0] == 40, "every due call must be closed"
        once = product.execute("""
            SELECT count(*), count(DISTINCT reference_id) FROM messenger.realtime_outbox WHERE kind = 'CallMissed'""").fetchone()
        assert once == (40, 40), "each call pushed exactly once"
        runs = dict(product.execute("SELECT lock_acquired, count(*) FROM messenger.call_reaper_runs GROUP BY 1").fetchall())
        print(f"\nreaper-loop x2, polling {INTERVAL_S} s: 40 calls closed, max lag past due {closed[1]:.2f} s "
              f"(SLO {INTERVAL_S} s); runs with the lock {runs.get(True, 0)}, skipped {runs.get(False, 0)}")
        assert closed[1] <= INTERVAL_S + SLACK_S, f"a call was closed {closed[1]:.2f} s after it was due"
        assert runs.get(True, 0) >= 3 and runs.get(False, 0) >= 1, \
            "both loops must have run, one of them finding the lock busy at some tick"
    conn.execute(f"DROP DATABASE {db} WITH (FORCE)")
