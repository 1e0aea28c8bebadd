"""The bench's Markdown report: one table per part, then every goal against its threshold."""

from __future__ import annotations

import math
import os
import pathlib
import platform
import statistics
import subprocess

import afterdrain
import busycost
import contestants
import costs
import cyclecost
import equalkeys
import goals
import idle
import idlewal
import precision
import product
import productwrites
import psycopg


def _fmt(v, spec: str) -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)


def _table(header: list[str], rows: list[list], align: str | None = None) -> list[str]:
    align = align or "|---|" + "---:|" * (len(header) - 1)
    return ["| " + " | ".join(header) + " |", align] + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows] + [""]


def drains(runs: dict[str, list[dict]], args) -> list[str]:
    b0, n = args.batches[0], args.backlog
    med = {name: contestants.median_run(r, n) for name, r in runs.items()}
    bound = med["bound"]["calls_s"]
    lines = [(f"Backlog {n:,} overdue calls, history {args.history:,}, {args.live:,} live calls,"
              f" {'partitioned' if args.partitioned else 'plain'} call_sessions, {args.rounds} round(s) at batch {b0}"
              f" (median), peer@{b0} in {min(args.peer_rounds, args.rounds)}, other batch sizes in 1"), ""]
    rows = []
    for name, r in med.items():
        kind, _, b = name.partition("@")
        peer = med.get(f"peer@{b}") if kind == "reaper" else None
        ex = [x.get("exec_ms") for x in runs[name]]
        ex_ms = statistics.median(ex) / max(r["cycles"], 1) if None not in ex else None
        rows.append([name, len(runs[name]), f"{r['calls_s']:,.0f}", r["cycles"], f"{r['wall_s'] * 1000 / max(r['cycles'], 1):.1f}",
                     _fmt(ex_ms, ".1f"), f"{r['calls_s'] / peer['calls_s']:.2f}x" if peer else "",
                     f"{r['calls_s'] / bound:.2f}x", _fmt(costs.per_call(r, "wal", n), ",.0f"),
                     _fmt(costs.per_call(r, "log", n), ",.0f"), _fmt(costs.per_call(r, "buffers", n), ",.1f"),
                     _fmt(costs.per_call(r, "multixacts", n), ".2f")])
    return lines + _table(["contestant", "runs", "calls/s", "cycles", "ms per cycle", "executor ms per cycle",
                           "vs peer (same batch)", "vs bound", "WAL B/call", "log B/call", "buffers/call",
                           "MultiXacts/call"], rows)


def cycle_cost_table(times: dict, args) -> list[str]:
    batches = sorted(times["reaper"])
    lines = [(f"A busy cycle's client-side ms by batch size, on {args.cycle_backlog:,} overdue calls reset before each"
              f" contestant: the median of {args.cycle_cycles} cycles (fewer where the backlog holds fewer), per pass"), ""]
    rows = [[f"@{b} ({2 * b:,} calls)"] + [" / ".join(f"{x:.2f}" for x in times[n][b]) for n in cyclecost.NAMES]
            for b in batches]
    return lines + _table(["batch", *cyclecost.NAMES], rows)


def idle_table(rows: list[dict]) -> list[str]:
    return _table(["idle cycle (nothing overdue)", "server median ms", "server p90 ms", "client median ms",
                   "buffers per cycle"],
                  [[i["label"], f"{i['server_ms']:.3f}", f"{i['p90_ms']:.3f}", f"{i['client_ms']:.3f}",
                    _fmt(i["buffers"], ".1f")] for i in rows])


def idle_wal(r: dict) -> list[str]:
    windows = [("by hand with an as_of, back to back", r["hand"]), ("by hand on the clock, back to back", r.get("clock")),
               ("scheduled by pg_cron", r["scheduled"])]
    windows = [(label, w) for label, w in windows if w]
    lines = _table(["idle cycle WAL", "cycles", "B/cycle (LSN delta)", "B/cycle without FPIs", "FPI B/cycle",
                    "FPIs/cycle", "records/cycle", "the reaper's / pg_cron's / other B in the window"],
                   [[label, w["counted"], f"{w['lsn_bytes']:,.0f}", f"{w['bytes']:,.0f}", f"{w['fpi']:,.0f}",
                     f"{w['images']:.1f}", f"{w['records']:.1f}",
                     " / ".join(f"{w['owners'][k]:,}" for k in ("reaper", "pg_cron", "other"))] for label, w in windows])
    for label, w in windows:
        lines += _table([f"top relations, {label}", "B/cycle without FPIs", "FPI B/cycle"],
                        [[name, f"{b:,.0f}", f"{f:,.0f}"] for name, b, f in w["top"]])
    lines += [(f"Each window starts after a CHECKPOINT and one warm-up cycle, so the full-page images of the pages"
              f" every cycle writes fall before it; the FPIs left are pages first touched since that checkpoint"
              f" (run ledger filled with {r['ledger_rows']:,} rows, as a server keeps it), which a server writes"
              f" again after each checkpoint: they are counted apart from the goal. The scheduled window holds"
              f" all the pg_cron jobs recorded meanwhile (this job's and the lock warden's runs)."), ""]
    return lines


def product_table(runs: list[dict], args) -> list[str]:
    lines = _table([f"product ({args.product_clients} clients x {args.product_rate:g} statements/s)", "triple",
                    "statements", "seconds", "live-call p50 ms", "p95 ms", "p99 ms", "p99 95 % interval",
                    "p99 new / answer / heartbeat / end", "late hangups", "late-hangup p99 ms", "waited on the drain",
                    "longest wait ms", "drain cycles", "cycle p50 / max ms"],
                   [[r["label"], "" if r["pair"] is None else r["pair"] + 1, f"{r['statements']:,}", f"{r['wall_s']:.1f}",
                     f"{r['live_p50']:.2f}", f"{r['live_p95']:.2f}", f"{r['live_p99']:.2f}",
                     f"{r['live_p99_ci'][0]:.2f}-{r['live_p99_ci'][1]:.2f}",
                     " / ".join(f"{r['kind_p99'][k]:.2f}" for k in product.KINDS),
                     f"{r['late_n']:,}", f"{r['late_p99']:.2f}", f"{r['waits']:,}", f"{r['wait_max_ms']:.1f}",
                     r["cycles"] or "", f"{r['cycle_p50_ms']:.1f} / {r['cycle_max_ms']:.1f}" if r["cycles"] else ""]
                    for r in runs])
    # What the backends were doing, summed over the runs of each kind: the product's statements
    # (share of their samples) and the drain's backend (share of its samples).
    labels = list(dict.fromkeys(r["label"] for r in runs))
    for key, who, prefix in (("events", "product live-call statements", "live call "),
                             ("events", "product late hangups", "late hangup "), ("drain_events", "drain backend", "")):
        totals = {lb: {} for lb in labels}
        for r in runs:
            for ev, n in r[key].items():
                if ev.startswith(prefix):
                    ev = ev.removeprefix(prefix)
                    totals[r["label"]][ev] = totals[r["label"]].get(ev, 0) + n
        shown = [lb for lb in labels if totals[lb]]
        if not shown:
            continue
        events = sorted({ev for lb in shown for ev in totals[lb]},
                        key=lambda ev: -max(totals[lb].get(ev, 0) / sum(totals[lb].values()) for lb in shown))
        lines += _table([f"{who}: sampled every {args.sample_ms:g} ms"] + [f"{lb} ({sum(totals[lb].values()):,} samples)"
                                                                          for lb in shown],
                        [[ev] + [f"{totals[lb].get(ev, 0) / sum(totals[lb].values()):.1%}" for lb in shown]
                         for ev in events[:12]])
    return lines


def product_writes_table(res: dict, args) -> list[str]:
    s = productwrites.summary(res)

    def xs(v: list[float]) -> str:
        return f"{statistics.median(v):.2f}x ({', '.join(f'{x:.2f}' for x in v)})" if v else ""

    rows = [[shape + (f" (no index added: the runs of '{r['same_as']}')" if r.get("same_as") else ""), r["runs"], f"{r['statements']:,}", f"{r['hot']:.0%}", f"{r['hot_progress']:.0%}",
             f"{r['wal_per']:,.0f}", _fmt(r["nofpi_per"], ",.0f"), xs(r["wal_per_x"]), xs(r["nofpi_per_x"]),
             f"{r['p50']:.2f}", f"{r['p95']:.2f}", f"{r['p99']:.2f}", f"{r['p99_spread'][0]:.2f}-{r['p99_spread'][1]:.2f}",
             xs(r["p99_x"])] for shape, r in s.items()]
    lines = [(f"Product writes on a copy of call_sessions ({args.history:,} archived calls, {args.pw_answered:,} live"
              f" Answered of which {args.pw_long:.0%} started before the stale window, {args.pw_ringing:,} Ringing):"
              f" {args.pw_clients} clients x {args.pw_rate:g} statements/s for {args.pw_seconds:g} s per run, a life ="
              f" {', '.join(productwrites.LIFE)}; {args.pw_rounds} interleaved rounds; ratios are per round against"
              f" 'none' in the same round, median (all rounds)"), ""]
    lines += _table(["index shape", "runs", "statements", "HOT of all updates", "HOT per progress update",
                     "WAL B/write", "without FPIs", "WAL vs none", "without FPIs vs none", "p50 ms", "p95 ms",
                     "p99 ms", "p99 range over runs", "p99 vs none"], rows)
    claims = {}
    for c in res["claims"]:
        claims.setdefault(c["shape"], {})[c["label"]] = c
    labels = list(next(iter(claims.values())))
    head = ["claim of one batch per phase (buffers / ms)"] + labels + [f"idle growth, buffers ({labels[0]} -> {labels[1]})"]
    lines += _table(head, [[shape] + [f"{c[x]['buffers']:,.0f} / {c[x]['ms']:.3f}" for x in labels]
                           + [f"{c[labels[1]]['buffers'] / max(c[labels[0]]['buffers'], 1):.2f}x"]
                           for shape, c in claims.items()])
    return lines


def after_drain_table(after: list[dict], args) -> list[str]:
    return _table([(f"idle after a {args.backlog:,}-call drain (autovacuum on, cycle 0 right after the drain's last,"
                   f" then every {args.poll_interval:g} s)"), "cycle", "seconds after", "buffers", "vs before the drain",
                   "server ms", "dead rows", "autovacuums since"],
                  [[f"{r['variant']} (before the drain: {r['pre']:.1f}; drain: {r['drain_cycles']} cycles)", c["cycle"],
                    f"{c['t_s']:.0f}", f"{c['buffers']:.0f}", f"{c['buffers'] / r['pre']:.1f}x", f"{c['ms']:.3f}",
                    f"{c['dead']:,}", c["autovacuums"]] for r in after for c in r["cycles"]])


def equal_keys_table(runs: list[dict], args) -> list[str]:
    return _table([(f"drain of {args.backlog:,} Ringing + {equalkeys.ANSWERED} stale Answered calls at batch"
                   f" {args.batches[0]}, by started_at"), "seconds", "cycles"], equalkeys.table_rows(runs))


def precision_table(runs: list[dict], args) -> list[str]:
    return _table(["scheduler, deadline wake", "seconds", "Missed calls", "lag p50 ms", "p99 ms", "max ms", "pushed twice",
                   "still ringing", "cycles", "reaper ms per closed call", "job slot-s per minute", "WAL KiB per minute"],
                  precision.table_rows(runs))


def busy_cost_table(runs: list[dict], args) -> list[str]:
    return _table([(f"a steady stream of Missed calls ({args.busy_rate:g} a second), one CALL of the job a minute,"
                    " median of the rounds"), "rounds", "closed", "ledger rows", "CPU ms per closed call", "of it, cycles' ms",
                   "WAL B per closed call", "lag p50 ms", "p99 ms", "idle minute: CPU ms", "idle minute: WAL B"],
                  busycost.table_rows(runs, args.busy_release))


def report(results: dict, run, total_s: float) -> str:
    args = run.args
    lines: list[str] = []
    values: dict = {}
    figures: list = []
    parts = (("drains", lambda r: drains(r, args), lambda r: contestants.measured(r, args)),
             ("equal_keys", lambda r: equal_keys_table(r, args), equalkeys.measured),
             ("cycle_cost", lambda r: cycle_cost_table(r, args), cyclecost.measured),
             ("idle", idle_table, lambda r: idle.measured(r, args.history)),
             ("idle_wal", idle_wal, idlewal.measured),
             ("product", lambda r: product_table(r, args), product.measured),
             ("product_writes", lambda r: product_writes_table(r, args), productwrites.measured),
             ("after_drain", lambda r: after_drain_table(r, args), afterdrain.measured),
             ("precision", lambda r: precision_table(r, args), precision.measured),
             ("busy_cost", lambda r: busy_cost_table(r, args), busycost.measured))
    for key, table, measure in parts:
        if results.get(key):
            lines += table(results[key])
            v, f = measure(results[key])
            values.update(v)
            figures += f
    lines += _table(["goal", "threshold", "measured", "met", "how measured"],
                    [list(r) for r in goals.rows(values, b0=args.batches[0], backlog=f"{args.backlog:,}",
                                               release=args.busy_release)],
                    "|---|---|---:|---|---|")
    if figures:
        lines += _table(["other figures (no goal)", "measured"], [list(f) for f in figures])
    lines.append(f"Total {total_s:.0f} s, of which seeding and resets {run.seeding_s:.0f} s."
                 f" Server log measured in {run.server_log or 'n/a (not found)'}.")
    return "\n".join(lines)


def machine() -> str:
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    try:
        pg = subprocess.run(["psql", "-XAtc", "SHOW server_version"], capture_output=True, text=True,
                            check=False).stdout.strip()
    except OSError:
        pg = "?"
    return (f"Machine: {os.cpu_count()} cores ({cpu}), {mem:.0f} GiB RAM, {platform.platform()}, "
            f"PostgreSQL {pg}, Python {platform.python_version()}, psycopg {psycopg.__version__}")


def write(text: str, markdown: str | None) -> None:
    print("\n" + text)
    if markdown:
        pathlib.Path(markdown).write_text(machine() + "\n" + text + "\n")
