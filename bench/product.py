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
from common import (
    AS_OF,
    CYCLE_SQL,
    RECENT,
    Pace,
    Run,
    cycle_as_of,
    log,
    quantile,
    quantile_interval,
    run_paced,
)
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

LATE_HANGUP_LIKE = "%OFFSET floor(random()%"


def client(run: Run, stop: threading.Event, lat: dict, errors: list) -> None:
    """One client of the product at a fixed rate: a call's life (new call, answer, three
    heartbeats, end) on its own live calls, then one late hangup: a caller cancelling one of
    the oldest overdue Ringing calls, the race the reaper's SKIP LOCKED claim is built for and
    the only statement that can wait on a row the reaper holds."""
    cutoff = by_status(run.phases, "Ringing").cutoff
    try:
        with run.connect(autocommit=True, application_name=PRODUCT_APP) as c:
            pace = Pace(run.args.product_rate)
            while not stop.is_set():
                call_id = uuid.uuid4()
                rung, answered = AS_OF - dt.timedelta(seconds=5), AS_OF - dt.timedelta(seconds=3)
                steps = [("new", PRODUCT_NEW, (call_id, uuid.uuid4(), uuid.uuid4(), rung, rung)),
                         ("answer", PRODUCT_ANSWER, (answered, answered, call_id))]
                steps += [("heartbeat", PRODUCT_HEARTBEAT, (AS_OF, call_id))] * 3
                steps += [("end", PRODUCT_END, (AS_OF, AS_OF, call_id)),
                          ("late_hangup", PRODUCT_LATE_HANGUP,
                           {"t": AS_OF, "cutoff": cutoff, "recent": AS_OF - RECENT})]
                run_paced(c, steps, pace, stop, lat)
    except psycopg.Error as e:  # reported by the main thread; a dead client must not go unnoticed
        errors.append(repr(e))


def lock_sampler(run: Run, stop: threading.Event, reaper: dict, waits: dict, events: dict, drain_events: dict) -> None:
    """Samples every few ms what the product's backends are doing while they run a statement
    (events: live-call or late-hangup statement, wait_event_type:wait_event or CPU when active
    with none) and what the drain's
    backend is doing (drain_events). A statement waiting on a heavyweight lock whose blockers
    include the drain's backend is also recorded with how long it had been running by then
    (statement start to sample, so a slight over-estimate of the wait)."""
    with run.connect(autocommit=True) as c:
        while not stop.is_set():
            for app, late, pid, started, waited_ms, blockers, wtype, event in c.execute(
                    "SELECT application_name, query LIKE %s, pid, query_start,"
                    "       extract(epoch FROM clock_timestamp() - query_start) * 1000,"
                    "       CASE WHEN wait_event_type = 'Lock' THEN pg_blocking_pids(pid) END, wait_event_type,"
                    "       wait_event"
                    "  FROM pg_stat_activity WHERE state = 'active'"
                    "   AND (application_name = %s OR pid = %s)",
                    (LATE_HANGUP_LIKE, PRODUCT_APP, reaper.get("pid", 0))).fetchall():
                name = "CPU" if wtype is None else f"{wtype}:{event}"
                if app != PRODUCT_APP:
                    drain_events[name] = drain_events.get(name, 0) + 1
                    continue
                if wtype == "Client":
                    continue
                name = f"{'late hangup' if late else 'live call'} {name}"
                events[name] = events.get(name, 0) + 1
                if wtype == "Lock" and reaper.get("pid") in (blockers or []):
                    key = (pid, started)
                    waits[key] = max(waits.get(key, 0.0), float(waited_ms))
            time.sleep(run.args.sample_ms / 1000)


KINDS = ("new", "answer", "heartbeat", "end")


def product_run(run: Run, label: str, drain: str | None, duty: float = 1.0, pair: int | None = None) -> dict:
    """drain: None (the product alone), "reaper" (cycles by hand, back to back), "polite"
    (CALL messenger.drain_call_timeouts(duty_cycle => duty)) or "batched-bound" (the control)."""
    seed.reset_backlog(run)
    stop = threading.Event()
    lat: dict[str, list[float]] = {k: [] for k in (*KINDS, "late_hangup")}
    errors: list[str] = []
    reaper: dict = {}
    waits: dict = {}
    events: dict = {}
    drain_events: dict = {}
    threads = [threading.Thread(target=client, args=(run, stop, lat, errors))
               for _ in range(run.args.product_clients)]
    sampler = threading.Thread(target=lock_sampler, args=(run, stop, reaper, waits, events, drain_events))
    for t in threads:
        t.start()
    cycle_ms: list[float] = []
    try:
        time.sleep(2)  # the clients connect and prepare their statements before it counts
        with run.connect(autocommit=True) as c:
            reaper["pid"] = c.info.backend_pid
            bare = st.close_and_push(run.phases, batched=True)
            c.execute("SELECT 1")
            sampler.start()
            for v in lat.values():
                v.clear()
            t0 = time.perf_counter()
            if drain == "polite":
                c.execute(POLITE_SQL, {"batch": run.args.batches[0], "as_of": AS_OF, "duty": duty})
                cycle_ms = [float(x) for (x,) in c.execute(
                    "SELECT duration_ms FROM messenger.call_reaper_runs WHERE missed_count + failed_count > 0")]
            while drain in ("reaper", "batched-bound"):
                t1 = time.perf_counter()
                if drain == "reaper":
                    missed, failed, _ms, _locked = c.execute(CYCLE_SQL, (run.args.batches[0], cycle_as_of())).fetchone()
                    closed = missed + failed
                else:
                    closed = c.execute(bare, st.params(run.phases, run.args.batches[0])).fetchone()[0]
                if closed == 0:
                    break
                cycle_ms.append((time.perf_counter() - t1) * 1000)
            if not drain:
                time.sleep(run.args.product_seconds)
            wall = time.perf_counter() - t0
    finally:
        stop.set()
        for t in threads:
            t.join()
        if sampler.is_alive():
            sampler.join()
    if errors:
        sys.exit(f"bench: product client failed: {errors[0]}")
    live = [x for k in KINDS for x in lat[k]]
    late = lat["late_hangup"]
    r = {
        "label": label, "drain": drain, "duty": duty, "pair": pair,
        "wall_s": wall, "statements": len(live) + len(late), "live_n": len(live),
        "live_p50": quantile(live, 0.50), "live_p95": quantile(live, 0.95), "live_p99": quantile(live, 0.99),
        "live_p99_ci": quantile_interval(live, 0.99),
        "kind_p99": {k: quantile(lat[k], 0.99) for k in KINDS},
        "late_n": len(late), "late_p50": quantile(late, 0.50), "late_p99": quantile(late, 0.99),
        "waits": len(waits), "wait_max_ms": max(waits.values(), default=0.0),
        "wait_total_ms": sum(waits.values()), "events": events, "drain_events": drain_events,
        "cycles": len(cycle_ms), "cycle_p50_ms": statistics.median(cycle_ms) if cycle_ms else None,
        "cycle_max_ms": max(cycle_ms, default=None),
    }
    lo, hi = r["live_p99_ci"]
    log(f"product {label}: {len(live) + len(late):,} statements in {wall:.1f} s, live p50 {r['live_p50']:.2f}"
        f" p95 {r['live_p95']:.2f} p99 {r['live_p99']:.2f} ms [{lo:.2f}, {hi:.2f}]; {len(waits)} waited on the"
        f" drain (max {r['wait_max_ms']:.1f} ms); product samples {events}; drain samples {drain_events}")
    return r


ALONE, REAPER, CONTROL = "alone", "reaper@{b0}", "control: batched-bound@{b0}"
POLITE = "polite: drain_call_timeouts(batch_size => {b0}, duty_cycle => {d:g})"
POLITE_SQL = ("CALL messenger.drain_call_timeouts(max_cycles => 1000000, batch_size => %(batch)s, as_of => %(as_of)s,"
              " duty_cycle => %(duty)s::real)")


def run_product(run: Run) -> list[dict]:
    """PRODUCT_PAIRS interleaved triples (alone, the reaper's drain, the control's drain), each
    triple in another order so neither drain always follows the other; then the polite drain at
    each DUTY_CYCLES value, if the deployed drain procedure has the setting."""
    b0 = run.args.batches[0]
    kinds = [(ALONE, None), (REAPER.format(b0=b0), "reaper"), (CONTROL.format(b0=b0), "batched-bound")]
    runs = []
    for i in range(run.args.product_pairs):
        order = kinds[i % 3:] + kinds[:i % 3] if i % 2 == 0 else list(reversed(kinds[i % 3:] + kinds[:i % 3]))
        for label, drain in order:
            runs.append(product_run(run, label, drain, pair=i))
    polite = run.admin.execute("SELECT to_regprocedure('messenger.drain_call_timeouts(integer, integer, interval,"
                               " interval, timestamptz, real, integer, bigint, bigint)')").fetchone()[0]
    for d in run.args.duty_cycles if polite else []:
        runs.append(product_run(run, POLITE.format(b0=b0, d=d), "polite", d))
    return runs


def by_pair(runs: list[dict], label: str) -> dict[int, dict]:
    return {r["pair"]: r for r in runs if r["label"] == label and r["pair"] is not None}


def pair_ratios(runs: list[dict], num: str, den: str, key: str = "live_p99") -> list[float]:
    a, b = by_pair(runs, num), by_pair(runs, den)
    return [a[k][key] / b[k][key] for k in sorted(a) if k in b and b[k][key]]


def measured(runs: list[dict]) -> tuple[dict, list]:
    if not by_pair(runs, ALONE):
        return {}, []
    labels = {r["label"] for r in runs}
    reaper = next(x for x in labels if x.startswith("reaper@"))
    control = next(x for x in labels if x.startswith("control"))
    values, figures = {}, []

    def med(rr: list[float]) -> tuple[float, str]:
        return statistics.median(rr), f"median of {len(rr)} pairs: " + ", ".join(f"{x:.2f}" for x in rr)

    for key, num, den in (("product_p99_control", reaper, control), ("product_p99", reaper, ALONE)):
        rr = pair_ratios(runs, num, den)
        if rr:
            values[key] = med(rr)
    for q in ("live_p95",):
        for num, den in ((reaper, control), (reaper, ALONE), (control, ALONE)):
            rr = pair_ratios(runs, num, den, q)
            if rr:
                m, detail = med(rr)
                figures.append((f"product live-call p95, {num} / {den} ({detail})", f"{m:.2f}x"))
    rr = pair_ratios(runs, control, ALONE)
    if rr:
        m, detail = med(rr)
        figures.append((f"product live-call p99, {control} / {ALONE} ({detail})", f"{m:.2f}x"))
    for label in (ALONE, reaper, control):
        p99s = [r["live_p99"] for r in runs if r["label"] == label]
        if len(p99s) > 1:
            what = (f"spread of the live-call p99 over the {len(p99s)} runs of {label}"
                    f" ({min(p99s):.2f}-{max(p99s):.2f} ms), max / min")
            figures.append((what, f"{max(p99s) / min(p99s):.2f}x"))
    alone = [r["live_p99"] for r in runs if r["label"] == ALONE]
    full = statistics.median(r["wall_s"] for r in runs if r["label"] == reaper)
    for r in (r for r in runs if r["drain"] == "polite"):
        figures.append((f"product live-call p99 during the {r['label']} / alone (median of the alone runs)",
                        f"{r['live_p99'] / statistics.median(alone):.2f}x"))
        figures.append((f"drain time of the {r['label']} / of reaper@ (median)", f"{r['wall_s'] / full:.2f}x"))
    during = [r for r in runs if r["label"] == reaper]
    longest = max(during, key=lambda r: r["wait_max_ms"])
    values["product_wait"] = (
        longest["wait_max_ms"] / longest["cycle_max_ms"] if longest["waits"] else 0.0,
        (f"{sum(r['waits'] for r in during)} waited in {len(during)} drains, longest {longest['wait_max_ms']:.1f} ms;"
         f" longest cycle of that drain {longest['cycle_max_ms'] or 0:.1f} ms"))
    return values, figures
