"""What every part of the bench shares: its far-future clock, the run's state, the log line,
the paced client loop of the product's statements."""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import math
import pathlib
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

import psycopg

REPO = pathlib.Path(__file__).resolve().parent.parent

# The bench lives in its own far-future window so no clock-driven job ever finds its rows
# overdue; every cycle it runs by hand gets this as_of.
AS_OF = dt.datetime(2099, 6, 1, 12, 0, tzinfo=dt.UTC)
HISTORY_SPAN_DAYS = 365
RECENT = dt.timedelta(days=3)  # history ends here; backlog and live calls start after it

# The statement text the parts look up in pg_stat_statements: every hand-run cycle uses it.
CYCLE_SQL = ("SELECT missed_count, failed_count, duration_ms, lock_acquired"
             "  FROM messenger.reap_call_timeouts(%s, NULL, NULL, %s)")
CYCLE_LIKE = "%FROM messenger.reap_call_timeouts(%"

_tick = itertools.count(1)


def cycle_as_of() -> dt.datetime:
    """The as_of of the bench's next reaper cycle: AS_OF plus a microsecond per cycle so far, as
    the job's clock moves on between its cycles. The reaper trusts its claim floor only at an
    as_of later than the cycle that set it (at the same one, a test may have written calls
    below it at that instant), so a run of cycles at one as_of would walk every drained entry
    again; a microsecond moves no call in or out of its window."""
    return AS_OF + dt.timedelta(microseconds=next(_tick))


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


@dataclass
class Run:
    """One bench run: its options, the admin session, the phases it builds statements from."""

    args: argparse.Namespace
    admin: psycopg.Connection
    phases: list = field(default_factory=list)
    server_log: pathlib.Path | None = None
    scheduled: bool = False  # the reaper's pg_cron job exists and is active
    profiling: bool = False  # PROFILE=1 and pg_stat_statements answers
    history: int = 0
    seeding_s: float = 0.0

    def connect(self, **kwargs) -> psycopg.Connection:
        return psycopg.connect(self.args.dsn, **kwargs)

    def statements_reset(self) -> bool:
        try:
            self.admin.execute("SELECT pg_stat_statements_reset()")
            return True
        except psycopg.Error:
            return False

    def cycle_buffers(self) -> float | None:
        """Shared buffers per hand-run cycle since the last statements_reset(). A top-level
        statement's figure includes its nested statements: the whole cycle."""
        return self.admin.execute(
            "SELECT sum(shared_blks_hit + shared_blks_read)::float8 / nullif(sum(calls), 0)"
            "  FROM pg_stat_statements WHERE toplevel AND query LIKE %s", (CYCLE_LIKE,)
        ).fetchone()[0]


def quantile(xs: list[float], q: float) -> float:
    """The q-quantile of xs (nearest rank), NaN for an empty list."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))]


def quantile_interval(xs: list[float], q: float, z: float = 1.96) -> tuple[float, float]:
    """A distribution-free 95 % interval of the q-quantile: the order statistics at ranks
    n*q -+ z*sqrt(n*q*(1-q)) (the binomial count of samples below the true quantile). With
    1,000 samples the p99 interval spans ranks 984-996: a p99 over a thousand statements is
    one of the dozen slowest, whichever it happens to be."""
    if not xs:
        return float("nan"), float("nan")
    s, n = sorted(xs), len(xs)
    half = z * math.sqrt(n * q * (1 - q))
    lo, hi = math.floor(n * q - half), math.ceil(n * q + half)
    return s[max(0, min(n - 1, lo - 1))], s[max(0, min(n - 1, hi - 1))]


class Pace:
    """A client's fixed rate of statements: wait() returns when the next one is due. Due times
    advance by the interval from the first, so a slow statement is caught up after, not skipped."""

    def __init__(self, rate: float) -> None:
        self.interval = 1.0 / rate
        self.t_next = time.perf_counter()

    def wait(self) -> None:
        delay = self.t_next - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        self.t_next += self.interval


def run_paced(c: psycopg.Connection, steps: Iterable[tuple[str, str, object]], pace: Pace,
              stop: threading.Event, lat: dict[str, list[float]] | None,
              prepare: bool | None = None) -> None:
    """Runs steps (kind, sql, params) on c, one at each of pace's due times, until stop is set;
    each statement's wall time in ms goes to lat[kind] (None: not timed). prepare as psycopg's
    execute (None: its own rule, prepared after a few runs)."""
    for kind, sql, params in steps:
        if stop.is_set():
            return
        pace.wait()
        t0 = time.perf_counter()
        c.execute(sql, params, prepare=prepare)
        if lat is not None:
            lat[kind].append((time.perf_counter() - t0) * 1000)
