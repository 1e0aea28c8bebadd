"""The product beside the reaper: clients running live calls' statements at a fixed rate, alone
and during a drain, with a sampler of the waits on the reaper's locks. A last run beside a drain
by the batched bound (the same claims and closes with no bookkeeping) is the control: on a
machine whose cores the drain and the clients share, it tells the reaper's own share of the
slowdown from what any drain at full speed costs the product."""

from __future__ import annotations

import datetime as dt
import statistics
import sys
import threading
import time
import uuid

import psycopg
import seed
import statements as st
from common import AS_OF, CYCLE_SQL, RECENT, Run, cycle_as_of, log
from phases import by_status

# The product's statements (bench part "product"): a client's own live calls, by primary key.
PRODUCT_APP = "bench-product"
PRODUCT_NEW = """
    INSERT INTO messenger.call_sessions
           (call_id, caller_user_id, callee_user_id, media_type, status, started_at, updated_at)
    VALUES (%s, %s, %s, 'Audio', 'Ringing', %s, %s)"""
PRODUCT_ANSWER = """
    UPDATE messenger.call_sessions SET status = 'Answered', answered_at = %s, updated_at = %s
     WHERE call_id = %s AND status = 'Ringing'"""
PRODUCT_HEARTBEAT = """
    UPDATE messenger.call_sessions SET updated_at = %s WHERE call_id = %s AND status = 'Answered'"""
PRODUCT_END = """
    UPDATE messenger.call_sessions
       SET status = 'Ended', end_reason = 'Hangup', ended_at = %s, updated_at = %s, duration_seconds = 3
     WHERE call_id = %s AND status = 'Answered'"""
# A caller cancels one of the oldest overdue Ringing calls: the rows the reaper claims next.
PRODUCT_LATE_HANGUP = """
    UPDATE messenger.call_sessions SET status = 'Missed', end_reason = 'Cancelled', ended_at = %(t)s, updated_at = %(t)s
     WHERE status = 'Ringing'
       AND call_id = (SELECT s.call_id FROM messenger.call_sessions AS s
                       WHERE s.status = 'Ringing' AND s.started_at <= %(cutoff)s AND s.started_at > %(recent)s
                       ORDER BY s.started_at, s.call_id OFFSET floor(random() * 400)::integer LIMIT 1)"""


def client(run: Run, stop: threading.Event, lat: dict, errors: list) -> None:
    """One client of the product at a fixed rate: a call's life (new call, answer, three
    heartbeats, end) on its own live calls, then one late hangup: a caller cancelling one of
    the oldest overdue Ringing calls, the race the reaper's SKIP LOCKED claim is built for and
    the only statement that can wait on a row the reaper holds."""
    interval = 1.0 / run.args.product_rate
    cutoff = by_status(run.phases, "Ringing").cutoff
    try:
        with run.connect(autocommit=True, application_name=PRODUCT_APP) as c:
            t_next = time.perf_counter()
            while not stop.is_set():
                call_id = uuid.uuid4()
                rung, answered = AS_OF - dt.timedelta(seconds=5), AS_OF - dt.timedelta(seconds=3)
                steps = [("new", PRODUCT_NEW, (call_id, uuid.uuid4(), uuid.uuid4(), rung, rung)),
                         ("answer", PRODUCT_ANSWER, (answered, answered, call_id))]
                steps += [("heartbeat", PRODUCT_HEARTBEAT, (AS_OF, call_id))] * 3
                steps += [("end", PRODUCT_END, (AS_OF, AS_OF, call_id)),
                          ("late_hangup", PRODUCT_LATE_HANGUP,
                           {"t": AS_OF, "cutoff": cutoff, "recent": AS_OF - RECENT})]
                for kind, sql, params in steps:
                    if stop.is_set():
                        break
                    delay = t_next - time.perf_counter()
                    if delay > 0:
                        time.sleep(delay)
                    t_next += interval
                    t0 = time.perf_counter()
                    c.execute(sql, params)
                    lat[kind].append((time.perf_counter() - t0) * 1000)
    except psycopg.Error as e:  # reported by the main thread; a dead client must not go unnoticed
        errors.append(repr(e))


def lock_sampler(run: Run, stop: threading.Event, reaper: dict, waits: dict, other: dict) -> None:
    """Samples the product's backends every few ms: a statement waiting on a heavyweight lock
    whose blockers include the reaper's backend is recorded with how long it had been running
    by then (statement start to sample, so a slight over-estimate of the wait)."""
    with run.connect(autocommit=True) as c:
        while not stop.is_set():
            for pid, started, waited_ms, blockers, wtype, event in c.execute(
                    "SELECT pid, query_start, extract(epoch FROM clock_timestamp() - query_start) * 1000,"
                    "       CASE WHEN wait_event_type = 'Lock' THEN pg_blocking_pids(pid) END, wait_event_type,"
                    "       wait_event"
                    "  FROM pg_stat_activity WHERE application_name = %s AND state = 'active'"
                    "   AND wait_event_type IS NOT NULL AND wait_event_type <> 'Client'",
                    (PRODUCT_APP,)).fetchall():
                key = (pid, started)
                if wtype == "Lock" and reaper.get("pid") in (blockers or []):
                    waits[key] = max(waits.get(key, 0.0), float(waited_ms))
                else:
                    other[f"{wtype}:{event}"] = other.get(f"{wtype}:{event}", 0) + 1
            time.sleep(run.args.sample_ms / 1000)


def product_run(run: Run, label: str, drain: str | None, pause_ms: float = 0.0) -> dict:
    """drain: None (the product alone), "reaper", or "batched-bound" (the control)."""
    seed.reset_backlog(run)
    stop = threading.Event()
    lat: dict[str, list[float]] = {k: [] for k in ("new", "answer", "heartbeat", "end", "late_hangup")}
    errors: list[str] = []
    reaper: dict = {}
    waits: dict = {}
    other: dict = {}
    threads = [threading.Thread(target=client, args=(run, stop, lat, errors))
               for _ in range(run.args.product_clients)]
    threads.append(threading.Thread(target=lock_sampler, args=(run, stop, reaper, waits, other)))
    for t in threads:
        t.start()
    cycle_ms: list[float] = []
    try:
        time.sleep(2)  # the clients connect and prepare their statements before it counts
        for v in lat.values():
            v.clear()
        t0 = time.perf_counter()
        if drain:
            bare = st.close_and_push(run.phases, batched=True)
            with run.connect(autocommit=True) as c:
                reaper["pid"] = c.info.backend_pid
                while True:
                    t1 = time.perf_counter()
                    if drain == "reaper":
                        missed, failed, _ms, _locked = c.execute(CYCLE_SQL, (run.args.batches[0], cycle_as_of())).fetchone()
                        closed = missed + failed
                    else:
                        closed = c.execute(bare, st.params(run.phases, run.args.batches[0])).fetchone()[0]
                    if closed == 0:
                        break
                    cycle_ms.append((time.perf_counter() - t1) * 1000)
                    if pause_ms:
                        time.sleep(pause_ms / 1000)
        else:
            time.sleep(run.args.product_seconds)
        wall = time.perf_counter() - t0
    finally:
        stop.set()
        for t in threads:
            t.join()
    if errors:
        sys.exit(f"bench: product client failed: {errors[0]}")
    live = [x for k in ("new", "answer", "heartbeat", "end") for x in lat[k]]
    late = lat["late_hangup"]

    def q(xs: list[float], p: int) -> float:
        return statistics.quantiles(xs, n=100, method="inclusive")[p - 1] if len(xs) > 1 else float("nan")

    r = {
        "wall_s": wall, "statements": len(live) + len(late), "live_p50": q(live, 50), "live_p99": q(live, 99),
        "late_n": len(late), "late_p50": q(late, 50), "late_p99": q(late, 99),
        "waits": len(waits), "wait_max_ms": max(waits.values(), default=0.0),
        "wait_total_ms": sum(waits.values()), "other_waits": dict(other),
        "cycles": len(cycle_ms), "cycle_p50_ms": statistics.median(cycle_ms) if cycle_ms else None,
        "cycle_max_ms": max(cycle_ms, default=None),
    }
    log(f"product {label}: {len(live) + len(late):,} statements in {wall:.1f} s, live p50"
        f" {q(live, 50):.2f} ms p99 {q(live, 99):.2f} ms; {len(waits)} waited on the reaper"
        f" (max {max(waits.values(), default=0.0):.1f} ms); other waits sampled: {other}")
    return r


def run_product(run: Run) -> dict[str, dict]:
    b0, pause = run.args.batches[0], run.args.drain_pause_ms
    plan = [("alone", None, 0.0), (f"during a {run.args.backlog:,}-call drain at batch {b0}", "reaper", 0.0)]
    if pause:
        plan.append((f"during a drain pausing {pause:g} ms between cycles", "reaper", pause))
    plan.append((CONTROL.format(b0=b0), "batched-bound", 0.0))
    return {label: product_run(run, label, drain, pause_ms) for label, drain, pause_ms in plan}


CONTROL = "control: during a drain by batched-bound@{b0}"


def measured(product: dict[str, dict]) -> tuple[dict, list]:
    runs = list(product.values())
    if len(runs) < 2:
        return {}, []
    alone, during = runs[0], runs[1]
    values = {
        "product_p99": (during["live_p99"] / alone["live_p99"], ""),
        # No wait at all counts as 0; one as long as the longest cycle is still within a cycle.
        "product_wait": (during["wait_max_ms"] / during["cycle_max_ms"] if during["waits"] else 0.0,
                         (f"{during['waits']} waited, longest {during['wait_max_ms']:.1f} ms,"
                          f" {during['wait_total_ms']:.0f} ms in all; longest cycle {during['cycle_max_ms'] or 0:.1f} ms")),
    }
    figures = []
    for label, r in list(product.items())[2:]:
        figures.append((f"product live-call p99 {label} / alone", f"{r['live_p99'] / alone['live_p99']:.2f}x"))
        if label.startswith("control"):
            figures.append(("product live-call p99 during the reaper's drain / during the control's",
                            f"{during['live_p99'] / r['live_p99']:.2f}x"))
    return values, figures
