"""A drain of Ringing calls that share one started_at (a bulk import, a migration that sets
started_at = now() for a whole transaction, a clock with coarse resolution) against the same
drain with the calls 1 ms apart, in interleaved rounds.

The claims read the product's index of active calls, (status, started_at) without call_id: a
claim whose cost grew with the calls of one started_at still to close would make the equal
drain quadratic in its backlog. Both shapes: BACKLOG Ringing calls overdue at AS_OF and 500
stale Answered ones, LIVE live calls, drained by CALL messenger.drain_call_timeouts at the first
batch size, as a DBA drains a backlog by hand."""

from __future__ import annotations

import statistics
import time

import seed
from common import AS_OF, RECENT, Run, log

ANSWERED = 500

# BACKLOG Ringing calls started an hour before AS_OF: all at that instant, or %(step)s apart.
RINGING_SQL = """
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, updated_at)
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing', t.s, t.s
  FROM (SELECT %(as_of)s::timestamptz - interval '1 hour' + g * %(step)s::interval
          FROM generate_series(1, %(n)s) AS g) AS t (s)
"""

SHAPES = {"one started_at": "0", "1 ms apart": "1 millisecond"}


def drain_once(run: Run, shape: str) -> dict:
    a = run.admin
    seed.reset_recent(run, 0, ANSWERED, run.args.live)
    a.execute(RINGING_SQL, {"as_of": AS_OF, "step": SHAPES[shape], "n": run.args.backlog})
    a.execute("VACUUM (ANALYZE, INDEX_CLEANUP ON) messenger.call_sessions")
    a.execute("CHECKPOINT")
    with run.connect(autocommit=True) as c:
        t0 = time.perf_counter()
        cycles, missed, failed = c.execute(
            "CALL messenger.drain_call_timeouts(max_cycles => 1000000, batch_size => %s, as_of => %s)",
            (run.args.batches[0], AS_OF)).fetchone()
        wall = time.perf_counter() - t0
    want = run.args.backlog, ANSWERED
    if (missed, failed) != want:
        raise SystemExit(f"bench: the {shape} drain closed {missed} missed and {failed} failed calls, not {want}")
    left = a.execute("SELECT count(*) FROM messenger.call_sessions WHERE started_at > %s AND status = 'Ringing'"
                     "   AND started_at <= %s::timestamptz - interval '45 seconds'",
                     (AS_OF - RECENT, AS_OF)).fetchone()[0]
    if left:
        raise SystemExit(f"bench: the {shape} drain left {left} due Ringing calls")
    log(f"equal keys: {shape}: {wall:.2f} s, {cycles} cycles")
    return {"shape": shape, "wall_s": wall, "cycles": cycles}


def run_equal_keys(run: Run) -> list[dict]:
    runs = []
    for _ in range(run.args.equal_rounds):
        for shape in SHAPES:
            runs.append(drain_once(run, shape))
    return runs


def table_rows(runs: list[dict]) -> list[list]:
    return [[r["shape"], f"{r['wall_s']:.2f}", r["cycles"]] for r in runs]


def measured(runs: list[dict]) -> tuple[dict, list]:
    equal = [r["wall_s"] for r in runs if r["shape"] == "one started_at"]
    spread = [r["wall_s"] for r in runs if r["shape"] == "1 ms apart"]
    ratios = [e / s for e, s in zip(equal, spread, strict=True)]
    ratio = statistics.median(ratios)
    return ({"equal_keys": (ratio, (f"{statistics.median(equal):.2f} s against {statistics.median(spread):.2f} s;"
                                   f" rounds {', '.join(f'{x:.2f}x' for x in ratios)}"))}, [])
