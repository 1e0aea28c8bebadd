"""A busy cycle's time as fixed ms plus µs per closed call, for the reaper and the batched bound.

The drain's goals compare the two at one batch size; this part says where the gap lies. A line
through two drains (as the drain part once fitted through @200 and @1000) bends with the larger
batch's own costs and put the gap per cycle; here each batch size of CYCLE_BATCHES runs
CYCLE_CYCLES timed cycles of each contestant on a fresh CYCLE_BACKLOG of overdue calls (half of
each phase, so every cycle's batch is full), in CYCLE_PASSES passes (4) of alternating order,
and a least-squares line goes through the medians of the passes. Both contestants close
2 x batch calls a cycle. Two passes left a run's fit at the mercy of one noisy pass (the fixed
gap read 1.02 to 1.64 ms and the per-call ratio 1.08x to 1.31x in three runs of one tree).

The line is weighted by 1 / median^2: a cycle's noise on these machines grows with its time (a
500-call point moves by milliseconds between runs, a 2-call point by tenths), and unweighted the
largest batch's noise decided the intercept (the fixed gap read 0.9, 3.4 and 1.3 ms in three runs
of one tree). At batch 1 a third contestant, the deadline wake's lean closure
(messenger._reap_deadline), closes one Ringing call per closure as the job does between its ticks:
calls due 1 ms apart just before the clock (the closure's as_of is always the clock), each
closure's window starting at the deadline of the call closed before it.

The bound joins its claims to call_sessions by primary key, as the reaper's generic
plans do: on a small HISTORY the planner would hash the whole table instead from a batch of 200
(13-17 ms where the line says 9), which is not the bare statement's cost on a table of any size.
"""

from __future__ import annotations

import datetime as dt
import statistics
import sys
import time

import seed
import statements as st
from common import AS_OF, CYCLE_SQL, RECENT, Run, cycle_as_of, log

NAMES = ("reaper", "batched-bound")


def _cycles_ms(run: Run, name: str, batch: int, cycles: int) -> float:
    """The median client-side ms of `cycles` committed cycles, after one untimed cycle (its plans)."""
    with run.connect(autocommit=True) as c:
        if name == "reaper":
            def one() -> int:
                missed, failed, _ms, locked = c.execute(CYCLE_SQL, (batch, cycle_as_of())).fetchone()
                if not locked:
                    sys.exit("bench: the reaper lost its lock to someone else")
                return missed + failed
        else:
            bound_sql = st.close_and_push(run.phases, batched=True)
            c.execute("SET enable_hashjoin = off")
            c.execute("SET enable_mergejoin = off")

            def one() -> int:
                return c.execute(bound_sql, st.params(run.phases, batch)).fetchone()[0]
        one()
        times = []
        for _ in range(cycles):
            t0 = time.perf_counter()
            closed = one()
            times.append(1000 * (time.perf_counter() - t0))
            if closed != 2 * batch:
                sys.exit(f"bench: {name}@{batch} closed {closed} calls in a cycle, not {2 * batch}: CYCLE_BACKLOG is too small")
    return statistics.median(times)


def _deadline_ms(run: Run, cycles: int) -> float:
    """The median client-side ms of `cycles` committed deadline closures of one call each, after
    one untimed closure (its plans); batch_size 1 meanwhile."""
    with run.connect(autocommit=True) as c:
        ring, batch = c.execute("SELECT ring_timeout, batch_size FROM messenger.call_reaper_settings").fetchone()
        c.execute("UPDATE messenger.call_reaper_settings SET batch_size = 1")
        base = c.execute("SELECT date_trunc('second', clock_timestamp()) - interval '10 seconds'").fetchone()[0]
        deadlines = [base + dt.timedelta(milliseconds=i) for i in range(cycles + 1)]
        c.execute("INSERT INTO messenger.call_sessions (call_id, caller_user_id, callee_user_id, media_type, status,"
                  "  started_at, updated_at)"
                  " SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing', d - %s, d - %s"
                  "   FROM unnest(%s::timestamptz[]) AS d", (ring, ring, deadlines))
        times = []
        try:
            after = base - dt.timedelta(milliseconds=1)
            for i, deadline in enumerate(deadlines):
                t0 = time.perf_counter()
                got = c.execute("SELECT result, missed_count FROM messenger._reap_deadline(%s)", (after,)).fetchone()
                if i:
                    times.append(1000 * (time.perf_counter() - t0))
                if got != ("completed", 1):
                    sys.exit(f"bench: the deadline closure returned {got}, not one call closed")
                after = deadline
        finally:
            c.execute("UPDATE messenger.call_reaper_settings SET batch_size = %s", (batch,))
            c.execute("DELETE FROM messenger.realtime_outbox WHERE created_at < %s", (AS_OF - RECENT,))
            c.execute("DELETE FROM messenger.call_sessions WHERE started_at BETWEEN %s AND %s",
                      (base - ring - dt.timedelta(seconds=1), deadlines[-1] - ring))
    return statistics.median(times)


def run_cycle_cost(run: Run) -> dict:
    """{contestant: {batch: [median ms of each pass]}}."""
    a = run.args
    half = a.cycle_backlog // 2
    times: dict[str, dict[int, list[float]]] = {n: {} for n in NAMES}
    for p in range(a.cycle_passes):
        for batch in a.cycle_batches:
            # One untimed cycle and the timed ones, each closing `batch` calls of each phase.
            cycles = min(a.cycle_cycles, half // batch - 1)
            if cycles < 3:
                sys.exit(f"bench: CYCLE_BACKLOG {a.cycle_backlog:,} is too small for batch {batch}")
            for name in NAMES if p % 2 == 0 else reversed(NAMES):
                seed.reset_recent(run, half, half, a.live)
                times[name].setdefault(batch, []).append(_cycles_ms(run, name, batch, cycles))
            if batch == 1:
                times.setdefault("deadline", {}).setdefault(1, []).append(_deadline_ms(run, a.cycle_cycles))
            log(f"cycle cost @{batch}, pass {p + 1}: "
                + ", ".join(f"{n} {times[n][batch][-1]:.2f} ms" for n in times if batch in times[n]))
    return times


def fit(by_batch: dict[int, list[float]]) -> tuple[float, float]:
    """(fixed ms, µs per closed call): least squares through each batch's median, each point
    weighted by 1 / its median^2 (its noise is about proportional to it)."""
    xs = [2 * b for b in by_batch]
    ys = [statistics.median(v) for v in by_batch.values()]
    ws = [1 / y ** 2 for y in ys]
    sw = sum(ws)
    mx = sum(w * x for w, x in zip(ws, xs, strict=True)) / sw
    my = sum(w * y for w, y in zip(ws, ys, strict=True)) / sw
    slope = (sum(w * (x - mx) * (y - my) for w, x, y in zip(ws, xs, ys, strict=True))
             / sum(w * (x - mx) ** 2 for w, x in zip(ws, xs, strict=True)))
    return my - slope * mx, 1000 * slope


def measured(times: dict) -> tuple[dict, list]:
    passes = len(next(iter(times["reaper"].values())))
    (rf, rk), (bf, bk) = (fit(times[n]) for n in NAMES)
    batches = sorted(times["reaper"])
    ratio = ", ".join(f"@{b} {statistics.median(times['batched-bound'][b]) / statistics.median(times['reaper'][b]):.2f}"
                      for b in batches)
    first = batches[0]
    gap = statistics.median(times["reaper"][first]) - statistics.median(times["batched-bound"][first])
    goals = {"cycle_fixed": (rf - bf, f"directly at @{first}: {gap:+.2f} ms"), "cycle_per_call": (rk / bk, "")}
    if "deadline" in times:
        bound1 = statistics.median(times["batched-bound"][1])
        closure = statistics.median(times["deadline"][1])
        goals["deadline_fixed"] = (closure - bound1, f"{closure:.2f} ms against {bound1:.2f} ms; passes "
                                   + ", ".join(f"{t:.2f}" for t in times["deadline"][1]))
    return goals, [
        ((f"a busy cycle's ms as fixed + µs per closed call (least squares weighted by 1/ms^2 through"
          f" @{batches[0]}..@{batches[-1]}, medians of {passes} passes): reaper; batched-bound"),
         f"{rf:.2f} ms + {rk:.1f} µs; {bf:.2f} ms + {bk:.1f} µs"),
        ("the reaper's cost above the batched bound's: per cycle; per closed call",
         f"{rf - bf:+.2f} ms; {rk - bk:+.1f} µs"),
        ("reaper / batched-bound by batch size (cycle time, inverted)", ratio),
    ]
