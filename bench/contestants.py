"""The drain: a backlog of overdue calls closed by each contestant, in interleaved rounds.

  reaper@N          messenger.reap_call_timeouts(N, ...) in autocommit until a cycle closes
                    nothing: one committed cycle per round trip, ledger, counters and logs included
  peer@N            the same rules from a client, the way an ORM worker runs them: advisory lock,
                    a SKIP LOCKED claim per phase, one UPDATE per call and one INSERT per outbox
                    row sent as a pipelined batch (like EF Core's SaveChanges), COMMIT
  batched-bound@N   one statement per committed cycle claiming both phases with SKIP LOCKED,
                    closing and pushing them, no bookkeeping: the gap to the bound is the price
                    of committed batches, the gap from the reaper to it the reaper's own
  bound             one set-based statement over the whole backlog, one commit
"""

from __future__ import annotations

import statistics
import sys
import time
import uuid

import costs
import profiling
import psycopg
import seed
import statements as st
from common import AS_OF, CYCLE_SQL, Run, cycle_as_of, log


def drain_reaper(run: Run, batch: int) -> dict:
    cycles = 0
    with run.connect(autocommit=True) as c:
        if run.args.profile:
            c.execute("SET pg_stat_statements.track = 'all'")
        t0 = time.perf_counter()
        while True:
            missed, failed, _ms, locked = c.execute(CYCLE_SQL, (batch, cycle_as_of())).fetchone()
            if not locked:
                sys.exit("bench: the reaper lost its lock to someone else")
            if missed + failed == 0:
                break
            cycles += 1
        wall = time.perf_counter() - t0
    return {"wall_s": wall, "cycles": cycles}


def drain_peer(run: Run, batch: int) -> dict:
    claims = {ph.phase: st.claim(ph, st.PEER_COLUMNS) for ph in run.phases}
    cycles = 0
    with run.connect() as c:
        c.execute("SELECT 1")
        c.commit()
        t0 = time.perf_counter()
        while True:
            closed = 0
            with c.transaction():
                if not c.execute("SELECT pg_try_advisory_xact_lock(messenger.call_reaper_lock_key())").fetchone()[0]:
                    sys.exit("bench: the peer lost its lock to someone else")
                run_id = c.execute("SELECT gen_random_uuid()").fetchone()[0]
                for ph in run.phases:
                    calls = c.execute(claims[ph.phase], {f"cutoff_{ph.phase}": ph.cutoff, "batch": batch}).fetchall()
                    if calls:
                        closed += _peer_close(run, c, ph, calls, run_id)
            if closed == 0:
                break
            cycles += 1
        wall = time.perf_counter() - t0
    return {"wall_s": wall, "cycles": cycles}


def _peer_close(run: Run, c: psycopg.Connection, ph, calls: list, run_id: uuid.UUID) -> int:
    with c.cursor() as cur:
        if run.args.partitioned:
            cur.executemany(st.PEER_UPDATE_PARTITIONED, [
                (ph.new_status, ph.end_reason, AS_OF, AS_OF, call[0], call[4], ph.status) for call in calls],
                returning=True)
        else:
            cur.executemany(st.PEER_UPDATE, [
                (ph.new_status, ph.end_reason, AS_OF, AS_OF, call[0], ph.status) for call in calls], returning=True)
        done = set()
        while True:
            row = cur.fetchone()
            if row:
                done.add(row[0])
            if not cur.nextset():
                break
        outbox = []
        for call_id, caller, callee, media, _started in calls:
            if call_id not in done:
                continue
            payload = psycopg.types.json.Jsonb({"callId": str(call_id), "status": ph.new_status, "mediaType": media})
            for user in (caller, callee) if ph.both_parties and callee != caller else (caller,):
                outbox.append((ph.outbox_kind, f"user:{user}", call_id, payload, run_id, AS_OF))
        cur.executemany(st.PEER_INSERT, outbox)
    return len(done)


def drain_batched_bound(run: Run, batch: int) -> dict:
    sql = st.close_and_push(run.phases, batched=True)
    cycles = 0
    with run.connect(autocommit=True) as c:
        t0 = time.perf_counter()
        while c.execute(sql, st.params(run.phases, batch)).fetchone()[0]:
            cycles += 1
        wall = time.perf_counter() - t0
    return {"wall_s": wall, "cycles": cycles}


def drain_bound(run: Run) -> dict:
    sql = st.close_and_push(run.phases, batched=False)
    with run.connect() as c:
        c.execute("SELECT 1")
        c.commit()
        t0 = time.perf_counter()
        c.execute(sql, st.params(run.phases))
        c.commit()
        wall = time.perf_counter() - t0
    return {"wall_s": wall, "cycles": 1}


def plan(run: Run) -> list[tuple[int, str, object]]:
    """Every round runs the goals' contestants at the first batch size, interleaved, so a noisy
    minute hits them all alike; the other batch sizes run in the first round only."""
    b0 = run.args.batches[0]
    steps = []
    for rnd in range(run.args.rounds):
        for b in run.args.batches:
            if b == b0 or rnd == 0:
                steps.append((rnd, f"reaper@{b}", lambda b=b: drain_reaper(run, b)))
            if (b == b0 and rnd < run.args.peer_rounds) or (b != b0 and rnd == 0):
                steps.append((rnd, f"peer@{b}", lambda b=b: drain_peer(run, b)))
            if b != b0 and rnd == 0:  # the reaper's ratio to it at a larger batch
                steps.append((rnd, f"batched-bound@{b}", lambda b=b: drain_batched_bound(run, b)))
        steps.append((rnd, f"batched-bound@{b0}", lambda: drain_batched_bound(run, b0)))
        steps.append((rnd, "bound", lambda: drain_bound(run)))
    return steps


def run_drains(run: Run) -> dict[str, list[dict]]:
    """{contestant: its runs}, each run with the round it ran in and its counted costs."""
    backlog = run.args.backlog
    profiled = f"reaper@{run.args.batches[0]}" if run.args.profile else None
    runs: dict[str, list[dict]] = {}
    for rnd, name, fn in plan(run):
        first_profiled = name == profiled and name not in runs
        if first_profiled:
            seed.reset_backlog(run)
            profiling.explain_apply(run, run.args.batches[0])
        seed.reset_backlog(run)
        if first_profiled:
            profiling.reset(run)
        r = costs.counted(run, fn)
        seed.check_drained(run, name)
        if first_profiled:
            profiling.show(run, name)
        r["calls_s"] = backlog / r["wall_s"]
        r["round"] = rnd
        log(f"{name}: {backlog:,} calls in {r['wall_s']:.2f} s = {r['calls_s']:,.0f} calls/s, {r['cycles']} cycles,"
            f" {costs.per_call(r, 'wal', backlog):,.0f} WAL B/call, {costs.per_call(r, 'log', backlog):,.0f} log B/call,"
            f" {costs.per_call(r, 'buffers', backlog):,.1f} buffers/call")
        runs.setdefault(name, []).append(r)
    return runs


def median_run(runs: list[dict], backlog: int) -> dict:
    """The contestant's median run by wall time, with the median wall time."""
    mid = dict(sorted(runs, key=lambda r: r["wall_s"])[(len(runs) - 1) // 2])
    mid["wall_s"] = statistics.median(r["wall_s"] for r in runs)
    mid["calls_s"] = backlog / mid["wall_s"]
    return mid


def round_ratios(runs: dict[str, list[dict]], num: str, den: str) -> list[float]:
    """num/den calls/s per round, each from the two contestants' runs in that round; a
    contestant that ran in one round only is compared with every round of the other."""
    a = {r["round"]: r["calls_s"] for r in runs.get(num, [])}
    b = {r["round"]: r["calls_s"] for r in runs.get(den, [])}
    if not a or not b:
        return []
    if len(b) == 1:
        b = dict.fromkeys(a, next(iter(b.values())))
    if len(a) == 1:
        a = dict.fromkeys(b, next(iter(a.values())))
    return [a[k] / b[k] for k in sorted(a) if k in b]


def measured(runs: dict[str, list[dict]], args) -> tuple[dict, list]:
    """The goals' values and the other figures of the drains."""
    b0 = args.batches[0]
    med = {name: median_run(r, args.backlog) for name, r in runs.items()}
    values, figures = {}, []
    for key, num, den in (("reaper_bound", f"reaper@{b0}", "bound"),
                          ("reaper_batched", f"reaper@{b0}", f"batched-bound@{b0}"),
                          ("reaper_peer", f"reaper@{b0}", f"peer@{b0}"),
                          (None, f"batched-bound@{b0}", "bound")):
        rr = round_ratios(runs, num, den)
        if not rr:
            continue
        detail = f"median of {len(rr)}: " + ", ".join(f"{x:.2f}" for x in rr)
        if key:
            values[key] = (statistics.median(rr), detail)
        else:
            figures.append((f"{num} / {den}: the price of committed batches ({detail})", f"{statistics.median(rr):.2f}x"))
    rp, bound, bb = med.get(f"reaper@{b0}"), med.get("bound"), med.get(f"batched-bound@{b0}")

    def per(r, key):
        return costs.per_call(r, key, args.backlog)

    if rp and rp.get("log") is not None:
        values["log_per_call"] = (per(rp, "log"), "")
    if rp and bound and rp.get("wal"):
        values["wal_vs_bound"] = (per(rp, "wal") / per(bound, "wal"), f"{per(rp, 'wal'):,.0f} / {per(bound, 'wal'):,.0f} B")
        if bb:
            figures.append((f"reaper@{b0} WAL per call / batched-bound@{b0}'s", f"{per(rp, 'wal') / per(bb, 'wal'):.2f}x"))
    if rp and bound and rp.get("buffers") and bound.get("buffers"):
        figures.append((f"reaper@{b0} buffers per call / bound's", f"{per(rp, 'buffers') / per(bound, 'buffers'):.2f}x"))
    # The second batch size's ratio, from the first round (the only one it runs in); where the
    # gap lies by batch size: cyclecost.py.
    if len(args.batches) > 1:
        b1 = args.batches[1]
        r0, r1 = (next((r for r in runs.get(n, []) if r["round"] == 0), None) for n in (f"reaper@{b1}", f"batched-bound@{b1}"))
        if r0 and r1:
            figures.append((f"reaper@{b1} / batched-bound@{b1} (first round)", f"{r0['calls_s'] / r1['calls_s']:.2f}x"))
    return values, figures
