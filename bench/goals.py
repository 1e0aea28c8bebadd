"""The bench's goals, all of them, in one table: what is promised, the threshold, how it is
measured. The parts fill in the measured values by key; the report prints every goal against
its threshold, and a goal whose part did not run as not measured."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Goal:
    key: str
    name: str  # {b0} = the first batch size, {backlog} = BACKLOG
    op: str  # "<=" or ">="
    threshold: float
    unit: str  # "x", "ms", "B", "B/cycle", "cycles" or "rows"
    how: str


RATIO_HOW = "calls/s of the two in the same round; the median over the ROUNDS interleaved rounds"

GOALS = (
    Goal("reaper_bound", "reaper / bound at batch {b0}", ">=", 0.6, "x", RATIO_HOW),
    Goal("reaper_batched", "reaper / batched-bound at batch {b0}", ">=", 0.9, "x", RATIO_HOW),
    Goal("reaper_peer", "reaper / app-side peer at batch {b0}", ">=", 2.5, "x", RATIO_HOW),
    Goal("log_per_call", "server log per call closed by reaper@{b0}", "<=", 150, "B",
         "growth of the server's log file during the median run / calls closed"),
    Goal("wal_vs_bound", "WAL per closed call, reaper@{b0} / bound", "<=", 1.1, "x",
         "insert-LSN delta of each median run / calls closed"),
    Goal("equal_keys", "drain of {backlog} Ringing calls with one started_at / the same calls 1 ms apart", "<=", 1.2,
         "x", "wall time of CALL drain_call_timeouts at the first batch size, the two shapes in EQUAL_ROUNDS interleaved"
         " rounds; the median of the rounds' ratios"),
    Goal("cycle_fixed", "a busy cycle's fixed cost above the batched bound's", "<=", 1.0, "ms",
         "cyclecost.py: least squares, weighted by 1/ms^2, of each contestant's median cycle ms against the calls"
         " it closed, through CYCLE_BATCHES (CYCLE_PASSES passes of alternating order); the reaper's intercept minus the bound's"),
    Goal("cycle_per_call", "a busy cycle's cost per closed call, reaper / batched bound", "<=", 1.1, "x",
         "the same fit; the reaper's slope / the bound's"),
    Goal("deadline_fixed", "a deadline closure of one call above the batched bound at batch 1", "<=", 0.3, "ms",
         "cyclecost.py: the median client-side ms of CYCLE_CYCLES committed messenger._reap_deadline closures of one"
         " Ringing call each, minus the batched bound's at @1 (which closes one call of each phase), per pass; the"
         " medians over CYCLE_PASSES passes"),
    Goal("precision_p99", "reap lag p99 of Missed calls, pg_cron job with the deadline wake", "<=", 50, "ms",
         "precision.py: ended_at - (started_at + ring_timeout) of every Missed call due in PRECISION_SECONDS of"
         " pgbench at PRECISION_RATE calls/s under the real pg_cron job"),
    Goal("precision_max", "reap lag max of Missed calls, pg_cron job with the deadline wake", "<=", 1000, "ms",
         "the same calls"),
    Goal("precision_loop_p99", "reap lag p99 of Missed calls, app-side loop (scripts/reaper-loop) with the wake",
         "<=", 50, "ms", "as precision_p99, PRECISION_LOOP_SECONDS with the pg_cron job inactive"),
    Goal("precision_loop_max", "reap lag max of Missed calls, app-side loop with the wake", "<=", 1000, "ms",
         "the same calls"),
    Goal("precision_twice", "Missed calls pushed more than once, with and without the wake", "<=", 0, "calls",
         "CallMissed outbox rows grouped by call"),
    Goal("busy_cpu", "a steady stream of Missed calls: the job's CPU per closed call, this tree / {release}", "<=", 1.5,
         "x", "busycost.py: the CALL's backend user + system time over the calls it closed, BUSY_ROUNDS interleaved"
         " minutes a contestant at BUSY_RATE calls/s (naps, probes and commits included); the medians' ratio"),
    Goal("busy_wal", "a steady stream of Missed calls: WAL per closed call, this tree / {release}", "<=", 1.1, "x",
         "the same minutes: the insert LSN's advance over the calls closed; the medians' ratio"),
    Goal("busy_ledger", "a steady stream of Missed calls: ledger rows per closed Missed call, this tree", "<=", 0.1,
         "rows", "the same minutes: call_reaper_runs rows the CALL wrote / the calls it closed; the median"),
    Goal("idle_active", "idle cycle time, fewest -> most live calls", "<=", 1.5, "x",
         "server-side median duration_ms of IDLE_CYCLES cycles at the largest IDLE_ACTIVE / at the smallest"),
    Goal("idle_history", "idle cycle time, smallest -> largest history", "<=", 1.5, "x",
         "as above, 100 live calls, at the largest IDLE_HISTORY / at the smallest"),
    Goal("idle_wal_hand", "WAL of an idle cycle run by hand with an as_of (recorded), without full-page images", "<=", 1024, "B/cycle",
         "pg_walinspect: record bytes minus FPI bytes of IDLE_WAL_CYCLES cycles / cycles (after a CHECKPOINT"
         " and one warm-up cycle)"),
    Goal("idle_wal_clock", "WAL of the reaper's own of an idle cycle on the clock (no as_of) run by hand",
         "<=", 0, "B/cycle",
         "pg_walinspect: bytes of the records on the messenger schema's relations, IDLE_WAL_CYCLES cycles of"
         " reap_call_timeouts() / cycles"),
    Goal("idle_wal_scheduled", "WAL of the reaper's own per minute while idle, run by the pg_cron job", "<=", 0,
         "B/min",
         "pg_walinspect over about IDLE_WAL_SECONDS of the resumed job (after a CHECKPOINT and one cycle):"
         " bytes of the records on the messenger schema's relations per minute; pg_cron's (schema cron) beside it"),
    Goal("idle_uncounted", "idle cycles the metrics did not count", "<=", 0, "cycles",
         "cycles run (by hand; scheduled: polling ticks in the window) minus the rise of"
         " call_reaper_metrics()' runs_completed + runs_skipped + runs_rolled_back (idle cycles in runs_completed)"),
    Goal("product_p99_control", "product live-call p99, during the reaper's drain / during the control's", "<=", 1.2,
         "x", "PRODUCT_CLIENTS clients at PRODUCT_RATE statements/s, client-side latency; PRODUCT_PAIRS interleaved"
         " triples (alone, reaper@{b0} drain, batched-bound@{b0} drain), the median of the triples' ratios"),
    Goal("product_p99", "product live-call p99, during the reaper's drain / alone", "<=", 1.5, "x",
         "the same runs, the median of the triples' ratios"),
    Goal("product_wait", "longest product wait on the reaper / longest reaper cycle", "<=", 1.0, "x",
         "pg_stat_activity and pg_blocking_pids() sampled every SAMPLE_MS during the drain (0: no wait)"),
    Goal("writes_wal", "product WAL per write, with the indexes the deploy added / without the reaper", "<=", 1.1, "x",
         "insert-LSN delta minus full-page images (pg_walinspect) / statements of PW_CLIENTS clients at PW_RATE"
         " for PW_SECONDS on a copy of call_sessions; the median of the PW_ROUNDS interleaved rounds' ratios"
         " (where the deploy added none, as beside the product's ix_call_active, its runs are the product alone's)"),
    Goal("writes_p99", "product write p99, with the indexes the deploy added / without the reaper", "<=", 1.1, "x",
         "client-side, the same runs; the median of the rounds' ratios"),
    Goal("first_idle", "buffers of the first idle cycle after a {backlog}-call drain / an idle cycle before it",
         "<=", 10, "x", "pg_stat_statements (shared hit + read, nested statements included) of the cycle"
         " right after the drain's last (the job's catch-up rule); deployed settings, autovacuum on"),
    Goal("after_drain_back", "idle cycles after the drain until buffers are within 2x of before it", "<=", 5,
         "cycles", "one idle cycle every POLL_INTERVAL s, autovacuum on, no manual VACUUM"),
)


def show(value: float, unit: str) -> str:
    if math.isinf(value):
        return "never"
    if unit == "x":
        return f"{value:.2f}x"
    if unit == "ms":
        return f"{value:.2f} ms"
    if unit == "rows":
        return f"{value:.3f} rows"
    return f"{value:,.0f} {unit}"


def rows(measured: dict[str, tuple[float, str]], **names) -> list[tuple[str, str, str, str, str]]:
    """(goal, threshold, measured, met, how) for every goal; met is '' when not measured."""
    out = []
    for g in GOALS:
        threshold = f"{g.op} {show(g.threshold, g.unit)}"
        if g.key not in measured:
            out.append((g.name.format(**names), threshold, "not measured", "", g.how))
            continue
        value, detail = measured[g.key]
        met = value <= g.threshold if g.op == "<=" else value >= g.threshold
        shown = show(value, g.unit) + (f" ({detail})" if detail else "")
        out.append((g.name.format(**names), threshold, shown, "yes" if met else "NO", g.how))
    return out
