"""Benchmark of messenger.reap_call_timeouts: drain speed against the alternatives, idle cost,
the product beside it, each against the goals in bench/goals.py.

`make bench` runs it in a throwaway cluster (bench/in-cluster creates the database, deploys the
Sqitch plan and starts this); the connection comes from the libpq PG* variables or --dsn.
Everything is measured side by side in one run because the machine is shared and noisy: only
ratios and counted units (WAL bytes, log bytes, buffers) are meant to be compared.

Parts (PARTS), each in its own module:
  idle         idle.py         cycles with nothing overdue, timed server-side, at several live-call
                               and history sizes
  idle-wal     idlewal.py      WAL per idle cycle, by hand and scheduled by the real pg_cron job,
                               named record by record by pg_walinspect
  drain        contestants.py  a backlog of overdue calls (half Ringing past ring_timeout, half
                               Answered past stale_timeout) closed by the reaper, an app-side peer,
                               the batched bound and the bound (statements.py builds the last
                               three from messenger.call_reaper_phases(), phases.py), in
                               interleaved rounds, with what each cost per call (costs.py)
  cycle-cost   cyclecost.py    a busy cycle's time at several batch sizes, the reaper's and the batched
                               bound's, as fixed ms + µs per closed call: where the drain's gap lies
  product      product.py      client connections running live calls' statements at a fixed rate,
                               alone and during a drain; latencies and waits on the reaper's locks
  product-writes productwrites.py
                               the service's own writes at a fixed rate on a copy of call_sessions
                               without the reaper's index, with ix_call_due and with candidate
                               shapes, interleaved: HOT updates, WAL and p99 per write, and what
                               each shape's claims cost
  after-drain  afterdrain.py   the first idle cycle after a drain, then idle cycles at the polling
                               interval with autovacuum on
  equal-keys   equalkeys.py    a drain of Ringing calls that share one started_at against the same
                               calls 1 ms apart, in interleaved rounds
  precision    precision.py    the real pg_cron job with pgbench ringing calls at a fixed rate, with
                               and without the deadline wake, then the app-side loop: each Missed
                               call's lag past its deadline, exactly once, slot-seconds, the
                               reaper's time per call
  busy-cost    busycost.py     a steady stream of Missed calls closed by this tree's job and by the
                               latest release's, a minute each in databases of their own: CPU and
                               WAL per closed call
seed.py seeds and resets the data, report.py prints the tables and the goals, profiling.py the
PROFILE=1 output.
"""

from __future__ import annotations

import argparse
import os
import time

import afterdrain
import busycost
import contestants
import costs
import cyclecost
import equalkeys
import idle
import idlewal
import phases
import precision
import product
import productwrites
import psycopg
import report
import seed
from common import Run

PARTS = ("idle", "idle-wal", "drain", "equal-keys", "cycle-cost", "product", "product-writes", "after-drain",
         "precision", "busy-cost")


def run_all(run: Run) -> dict:
    a, parts = run.args, run.args.parts
    seed.prepare(run)
    run.phases = phases.load(run.admin)
    results: dict = {"idle": []}
    for level in sorted(set(a.idle_history) | {a.history}):
        seed.grow_history(run, level)
        if level in a.idle_history and "idle" in parts:
            seed.reset_recent(run, 0, 0, 100)
            results["idle"].append(idle.idle_cycles(run, f"history {level:,}, 100 active", 100))
        if level != a.history:
            continue
        if "idle" in parts:
            for active in a.idle_active:
                seed.reset_recent(run, 0, 0, active)
                results["idle"].append(idle.idle_cycles(run, f"{active:,} active, history {level:,}", active))
        if "idle-wal" in parts:
            seed.reset_recent(run, 0, 0, 100)
            results["idle_wal"] = idlewal.run_idle_wal(run)
        if "drain" in parts:
            results["drains"] = contestants.run_drains(run)
        if "equal-keys" in parts:
            results["equal_keys"] = equalkeys.run_equal_keys(run)
        if "cycle-cost" in parts:
            results["cycle_cost"] = cyclecost.run_cycle_cost(run)
        if "product" in parts:
            results["product"] = product.run_product(run)
        if "product-writes" in parts:
            results["product_writes"] = productwrites.run_product_writes(run)
        if "after-drain" in parts:
            results["after_drain"] = afterdrain.run_after_drain(run)
        if "precision" in parts:
            results["precision"] = precision.run_precision(run)
        if "busy-cost" in parts:
            results["busy_cost"] = busycost.run_busy_cost(run)
    return results


def int_list(text: str) -> list[int]:
    return [int(x.replace("_", "")) for x in text.split(",") if x.strip()]


def main() -> None:
    env = os.environ.get
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dsn", default=env("DATABASE_URL", ""), help="libpq DSN (default: DATABASE_URL, else PG* variables)")
    p.add_argument("--history", type=lambda s: int(s.replace("_", "")), default=int(env("HISTORY", "1000000")),
                   help="terminal calls in the table during the drains (HISTORY, default 1000000)")
    p.add_argument("--backlog", type=lambda s: int(s.replace("_", "")), default=int(env("BACKLOG", "100000")),
                   help="overdue calls to drain, half Ringing, half stale Answered (BACKLOG, default 100000)")
    p.add_argument("--live", type=int, default=int(env("LIVE", "1000")),
                   help="active calls that are not overdue during the drains (LIVE, default 1000)")
    p.add_argument("--batches", type=int_list, default=int_list(env("BATCHES", "200,1000")),
                   help="reaper and peer batch sizes; the first is the goal's (BATCHES, default 200,1000)")
    p.add_argument("--cycle-batches", type=int_list, default=int_list(env("CYCLE_BATCHES", "1,25,100,200,500")),
                   help="cycle-cost: batch sizes (CYCLE_BATCHES, default 1,25,100,200,500)")
    p.add_argument("--cycle-backlog", type=lambda s: int(s.replace("_", "")), default=int(env("CYCLE_BACKLOG", "40000")),
                   help="cycle-cost: overdue calls seeded before each contestant's cycles (CYCLE_BACKLOG, default 40000)")
    p.add_argument("--cycle-cycles", type=int, default=int(env("CYCLE_CYCLES", "30")),
                   help="cycle-cost: timed cycles per batch size, contestant and pass (CYCLE_CYCLES, default 30)")
    p.add_argument("--cycle-passes", type=int, default=int(env("CYCLE_PASSES", "4")),
                   help="cycle-cost: passes over CYCLE_BATCHES, in alternating order of the contestants"
                        " (CYCLE_PASSES, default 4)")
    p.add_argument("--idle-active", type=int_list, default=int_list(env("IDLE_ACTIVE", "100,10000,100000")),
                   help="live call counts for the idle cycle (IDLE_ACTIVE, default 100,10000,100000)")
    p.add_argument("--idle-history", type=int_list, default=None,
                   help="history sizes for the idle cycle (IDLE_HISTORY, default HISTORY/10,HISTORY;"
                        " e.g. 1000000,10000000 for the 10M goal)")
    p.add_argument("--idle-cycles", type=int, default=int(env("IDLE_CYCLES", "500")),
                   help="timed idle cycles per size, after 20 warm-up ones (IDLE_CYCLES, default 500)")
    p.add_argument("--rounds", type=int, default=int(env("ROUNDS", "5")),
                   help="interleaved rounds of reaper, peer, batched-bound and bound at the first batch size; the"
                        " goals' ratios are the median of the rounds' ratios (ROUNDS, default 5)")
    p.add_argument("--peer-rounds", type=int, default=int(env("PEER_ROUNDS", "0")) or None,
                   help="rounds that also run the peer at the first batch size (PEER_ROUNDS, default all of them)")
    p.add_argument("--parts", type=lambda t: set(t.split(",")), default=set(env("PARTS", ",".join(PARTS)).split(",")),
                   help=f"what to run: {', '.join(PARTS)} (PARTS, default all)")
    p.add_argument("--idle-wal-cycles", type=int, default=int(env("IDLE_WAL_CYCLES", "100")),
                   help="idle cycles run by hand in the WAL window (IDLE_WAL_CYCLES, default 100)")
    p.add_argument("--idle-wal-seconds", type=float, default=float(env("IDLE_WAL_SECONDS", "120")),
                   help="seconds the scheduled job runs in its WAL window, after up to a minute and a polling"
                        " interval of warm-up; 0 to skip it (IDLE_WAL_SECONDS, default 120)")
    p.add_argument("--product-clients", type=int, default=int(env("PRODUCT_CLIENTS", "4")),
                   help="product client connections (PRODUCT_CLIENTS, default 4)")
    p.add_argument("--product-rate", type=float, default=float(env("PRODUCT_RATE", "100")),
                   help="statements per second per product client (PRODUCT_RATE, default 100)")
    p.add_argument("--product-seconds", type=float, default=float(env("PRODUCT_SECONDS", "8")),
                   help="length of the product-alone run, about a drain's (PRODUCT_SECONDS, default 8)")
    p.add_argument("--product-pairs", type=int, default=int(env("PRODUCT_PAIRS", "3")),
                   help="interleaved triples of the product alone, beside the reaper's drain and beside the"
                        " control's; the goals are the median of the triples' ratios (PRODUCT_PAIRS, default 3)")
    p.add_argument("--duty-cycles", type=lambda t: [float(x) for x in t.split(",") if x.strip()],
                   default=[float(x) for x in env("DUTY_CYCLES", "0.5").split(",") if x.strip()],
                   help="also run the product during a polite drain, CALL drain_call_timeouts(duty_cycle => d), at"
                        " each of these; empty to skip (DUTY_CYCLES, default 0.5)")
    p.add_argument("--sample-ms", type=float, default=float(env("SAMPLE_MS", "5")),
                   help="lock-wait sampling interval (SAMPLE_MS, default 5)")
    p.add_argument("--pw-clients", type=int, default=int(env("PW_CLIENTS", "4")),
                   help="product-writes: client connections (PW_CLIENTS, default 4)")
    p.add_argument("--pw-rate", type=float, default=float(env("PW_RATE", "100")),
                   help="product-writes: statements per second per client (PW_RATE, default 100)")
    p.add_argument("--pw-seconds", type=float, default=float(env("PW_SECONDS", "10")),
                   help="product-writes: seconds per run (PW_SECONDS, default 10)")
    p.add_argument("--pw-rounds", type=int, default=int(env("PW_ROUNDS", "3")),
                   help="product-writes: interleaved rounds of every index shape (PW_ROUNDS, default 3)")
    p.add_argument("--pw-answered", type=lambda s: int(s.replace("_", "")), default=int(env("PW_ANSWERED", "20000")),
                   help="product-writes: live Answered calls whose progress the clients write (PW_ANSWERED, default 20000)")
    p.add_argument("--pw-ringing", type=lambda s: int(s.replace("_", "")), default=int(env("PW_RINGING", "1000")),
                   help="product-writes: live Ringing calls beside them (PW_RINGING, default 1000)")
    p.add_argument("--pw-long", type=float, default=float(env("PW_LONG", "0.01")),
                   help="product-writes: share of live Answered calls started before the stale window, still"
                        " talking (PW_LONG, default 0.01)")
    p.add_argument("--pw-idle-live", type=lambda s: int(s.replace("_", "")), default=int(env("PW_IDLE_LIVE", "100000")),
                   help="product-writes: live calls of the larger idle claim (PW_IDLE_LIVE, default 100000)")
    p.add_argument("--pw-claim-runs", type=int, default=int(env("PW_CLAIM_RUNS", "5")),
                   help="product-writes: runs of each claim, the median kept (PW_CLAIM_RUNS, default 5)")
    p.add_argument("--poll-interval", type=float, default=float(env("POLL_INTERVAL", "15")),
                   help="seconds between idle cycles after the drain: the job's polling interval (POLL_INTERVAL, default 15)")
    p.add_argument("--equal-rounds", type=int, default=int(env("EQUAL_ROUNDS", "3")),
                   help="equal-keys: interleaved rounds of the two shapes (EQUAL_ROUNDS, default 3)")
    p.add_argument("--after-drain-cycles", type=int, default=int(env("AFTER_DRAIN_CYCLES", "6")),
                   help="idle cycles measured after the drain's last one (AFTER_DRAIN_CYCLES, default 6)")
    p.add_argument("--after-drain-baseline", action="store_true", default=env("AFTER_DRAIN_BASELINE", "") not in ("", "0"),
                   help="also run the after-drain part with call_sessions' autovacuum settings reset (AFTER_DRAIN_BASELINE=1)")
    p.add_argument("--partitioned", action="store_true", default=env("PARTITIONED", "") not in ("", "0"),
                   help="call_sessions range-partitioned by month with pg_partman, as the partitioned stand-in"
                        " makes it (bench/in-cluster builds that one when PARTITIONED=1)")
    p.add_argument("--profile", action="store_true", default=env("PROFILE", "") not in ("", "0"),
                   help="print pg_stat_statements for the first reaper drain (PROFILE=1)")
    p.add_argument("--markdown", default=env("BENCH_MARKDOWN"), help="also write the tables to this file")
    args = p.parse_args()
    for name, value in busycost.env_defaults().items():
        setattr(args, name, value)   # BUSY_* (bench/busycost.py's header)
    for name, value in precision.env_defaults().items():
        setattr(args, name, value)   # PRECISION_* (bench/precision.py's header)
    if args.idle_history is None:
        args.idle_history = int_list(env("IDLE_HISTORY", "")) or [max(args.history // 10, 1), args.history]
    if args.peer_rounds is None:
        args.peer_rounds = args.rounds
    unknown = args.parts - set(PARTS)
    if unknown:
        p.error(f"unknown part(s): {', '.join(sorted(unknown))}")
    t0 = time.perf_counter()
    admin = psycopg.connect(args.dsn, autocommit=True)
    run = Run(args=args, admin=admin, server_log=costs.find_server_log(admin))
    results = run_all(run)
    report.write(report.report(results, run, time.perf_counter() - t0), args.markdown)


if __name__ == "__main__":
    main()
