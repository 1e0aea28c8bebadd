"""Idle cycles (nothing overdue), timed server-side, at several live-call and history sizes."""

from __future__ import annotations

import statistics
import sys
import time

from common import CYCLE_SQL, Run, cycle_as_of, log

WARM_UP = 20  # plan caches, buffers


def idle_cycles(run: Run, label: str, active: int) -> dict:
    server, client = [], []
    have_pgss = False
    with run.connect(autocommit=True) as c:
        for i in range(run.args.idle_cycles + WARM_UP):
            if i == WARM_UP:
                have_pgss = run.statements_reset()
            t0 = time.perf_counter()
            missed, failed, ms, _locked = c.execute(CYCLE_SQL, (None, cycle_as_of())).fetchone()
            elapsed = (time.perf_counter() - t0) * 1000
            if missed or failed:
                sys.exit(f"bench: idle cycle closed {missed + failed} calls")
            if i >= WARM_UP:
                server.append(float(ms))
                client.append(elapsed)
    log(f"idle {label}: median {statistics.median(server):.3f} ms server-side")
    # Shared buffers, unlike time, do not depend on what else the machine is doing.
    return {"label": label, "history": run.history, "active": active,
            "server_ms": statistics.median(server), "client_ms": statistics.median(client),
            "p90_ms": statistics.quantiles(server, n=10)[-1], "buffers": run.cycle_buffers() if have_pgss else None}


def growth(idle: list[dict], history: int) -> dict[str, tuple[dict, dict]]:
    """(smallest, largest) size of each series: live calls at full history, history at 100."""
    out = {}
    by_active = {i["active"]: i for i in idle if i["label"].endswith(f"history {history:,}")}
    if len(by_active) > 1:
        out["active"] = (by_active[min(by_active)], by_active[max(by_active)])
    by_history = {i["history"]: i for i in idle if i["label"].startswith("history ")}
    if len(by_history) > 1:
        out["history"] = (by_history[min(by_history)], by_history[max(by_history)])
    return out


def measured(idle: list[dict], history: int) -> tuple[dict, list]:
    values, figures = {}, []
    for series, (lo, hi) in growth(idle, history).items():
        a, b = lo[series], hi[series]
        values[f"idle_{series}"] = (hi["server_ms"] / lo["server_ms"],
                                    f"{a:,} -> {b:,}: {lo['server_ms']:.3f} -> {hi['server_ms']:.3f} ms")
        if lo["buffers"] and hi["buffers"]:
            figures.append((f"idle cycle buffers, {a:,} -> {b:,} {'live calls' if series == 'active' else 'history'}",
                            f"{hi['buffers'] / lo['buffers']:.2f}x"))
    return values, figures
