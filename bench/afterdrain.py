"""Idle cycles after a drain, with autovacuum on: what the first one reads, and how soon the
deployed autovacuum settings bring them back to what they read before the drain.

Buffers, not time: the first idle cycle after a drain walks the index entries the drain left
dead (until VACUUM removes them or a scan marks them), and that count does not depend on what
else the machine is doing."""

from __future__ import annotations

import math
import sys
import time

import psycopg
import seed
from common import CYCLE_SQL, Run, cycle_as_of, log

STATS = ("SELECT n_dead_tup, autovacuum_count FROM pg_stat_user_tables"
         " WHERE relid = 'messenger.call_sessions'::regclass")


def idle_buffers(run: Run, c: psycopg.Connection, cycles: int) -> tuple[float, float]:
    """Shared buffers per idle cycle (mean over cycles) and the last cycle's server ms, on a
    session that has already planned the cycle's statements (the first cycle of a session
    also reads the catalogs to plan them: about 1,600 buffers)."""
    run.statements_reset()
    for _ in range(cycles):
        ms = c.execute(CYCLE_SQL, (None, cycle_as_of())).fetchone()[2]
    return run.cycle_buffers(), float(ms)


def drain(run: Run, c: psycopg.Connection) -> int:
    """Drains the backlog on c at the first batch size the way the job's catch-up does: cycle
    after cycle until one closes less than a full batch in every phase. Returns the cycles."""
    batch, cycles = run.args.batches[0], 0
    while True:
        missed, failed, _ms, locked = c.execute(CYCLE_SQL, (batch, cycle_as_of())).fetchone()
        if not locked:
            sys.exit("bench: the reaper lost its lock to someone else")
        cycles += 1
        if max(missed, failed) < batch:
            return cycles


def after_drain_run(run: Run, variant: str) -> dict:
    """Idle cycles after a drain: the first right after its last cycle (the job's next tick
    would come a polling interval later: this is the worst case), then one per polling interval
    in real time. call_sessions' own autovacuum settings as deployed, or reset to the server's
    defaults to see what the deploy's settings buy."""
    a = run.admin
    saved = a.execute("SELECT reloptions FROM pg_class WHERE oid = 'messenger.call_sessions'::regclass").fetchone()[0]
    if variant != "as deployed":
        a.execute("ALTER TABLE messenger.call_sessions RESET (autovacuum_vacuum_scale_factor, autovacuum_vacuum_threshold)")
    try:
        # An autovacuum ANALYZE running meanwhile would hold back the reset's VACUUM (see the
        # Makefile), leaving dead entries in the "before" figure.
        wait_autovacuum_idle(a)
        seed.reset_recent(run, 0, 0, 100)
        # Twice: a snapshot held for a moment elsewhere (pg_cron's launcher polls every minute)
        # sometimes keeps the first VACUUM from removing the deleted calls' entries, which
        # inflated the "before" figure (15 -> 33 buffers) in one run of three.
        a.execute("VACUUM (INDEX_CLEANUP ON) messenger.call_sessions")
        with run.connect(autocommit=True) as c:
            idle_buffers(run, c, 20)  # warm-up
            pre, _ = idle_buffers(run, c, 20)
            seed.reset_backlog(run, live=100)
            av0 = a.execute(STATS).fetchone()[1]
            drained = drain(run, c)
            t_end = time.perf_counter()
            cycles = []
            for i in range(run.args.after_drain_cycles + 1):
                delay = t_end + i * run.args.poll_interval - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                bufs, ms = idle_buffers(run, c, 1)
                dead, av = a.execute(STATS).fetchone()
                cycles.append({"cycle": i, "t_s": time.perf_counter() - t_end, "buffers": bufs, "ms": ms,
                               "dead": dead, "autovacuums": av - av0})
                log(f"after drain ({variant}) cycle {i}: {bufs:.0f} buffers, {ms:.3f} ms, {dead:,} dead rows,"
                    f" {av - av0} autovacuum(s) so far")
    finally:
        if variant != "as deployed" and saved:
            a.execute(f"ALTER TABLE messenger.call_sessions SET ({', '.join(saved)})")
    return {"variant": variant, "pre": pre, "drain_cycles": drained, "cycles": cycles}


def wait_autovacuum_idle(a: psycopg.Connection, limit_s: float = 120) -> None:
    t0 = time.perf_counter()
    while a.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'").fetchone()[0]:
        if time.perf_counter() - t0 > limit_s:
            log(f"autovacuum still busy after {limit_s:.0f} s, going on")
            return
        time.sleep(0.5)


def run_after_drain(run: Run) -> list[dict]:
    a = run.admin
    # The rest of the bench runs without autovacuum (see the Makefile); this part is about what
    # autovacuum does, so it runs with the server's defaults. Turned on before the pre-drain
    # figure so its launcher keeps its own rhythm, as on a real server.
    a.execute("ALTER SYSTEM SET autovacuum = on")
    a.execute("SELECT pg_reload_conf()")
    try:
        variants = ["as deployed"] + (["server defaults"] if run.args.after_drain_baseline else [])
        return [after_drain_run(run, v) for v in variants]
    finally:
        a.execute("ALTER SYSTEM RESET autovacuum")
        a.execute("SELECT pg_reload_conf()")


def measured(after: list[dict]) -> tuple[dict, list]:
    dep = next((r for r in after if r["variant"] == "as deployed"), None)
    if not dep:
        return {}, []
    pre = dep["pre"]
    back = next((c["cycle"] for c in dep["cycles"] if c["buffers"] <= 2 * pre), math.inf)
    first = dep["cycles"][0]["buffers"]
    return {"first_idle": (first / pre, f"{first:,.0f} against {pre:.1f} buffers"),
            "after_drain_back": (back, f"cycle 0: {first:,.0f} buffers")}, []
