"""What a steady stream of Missed calls costs the reaper, this tree against the latest release,
each run as its scheduled job runs it (one CALL of run_call_reaper_ticks() a minute, pg_cron 1.4's
loop), in the same cluster and run.

Each contestant has a database of its own beside the bench's: the stand-in product tables and the
reaper deployed without pg_cron (`--set scheduler=none`), `main` from this tree and `release` at
the plan's tag BUSY_RELEASE (@v2.0.0). Before a round, both get BUSY_RATE Ringing calls a second
whose deadlines fall between the 2nd and the 57th second of that contestant's minute (ring_timeout
90 s, so every call has started before it is inserted); then, at the top of the minute, the
contestant's CALL runs to the end of it: this tree closes each call at its deadline
(wake_at_deadline, on by default), the release at its next 15 s tick. Nothing else writes in the
window (autovacuum is off in the bench cluster, and the bench database's pg_cron jobs are made
inactive for the part), so per closed call:
  - CPU: the CALL's backend's user + system time (/proc/<pid>/stat) over the calls it closed,
    and the ledger's duration_ms over them (the full cycles' own time; this tree's deadline
    closures leave no ledger row);
  - WAL: the insert LSN's advance over the calls it closed;
  - ledger rows, and each call's lag past its deadline (ended_at - (started_at + ring_timeout)).
The release closes the calls due after its last tick (:45) at the next minute's, outside the
window: its figures are over the calls it closed in it. BUSY_ROUNDS rounds, the order
alternating; the medians are reported. Then one idle minute each (no call at all): CPU ms and
WAL bytes a minute, what the deadline wake's probes cost a server where nothing rings.
BUSY_ROUNDS=0 skips the part.
"""

from __future__ import annotations

import datetime as dt
import os
import pathlib
import statistics
import subprocess
import time

import psycopg
from common import Run, log, quantile

ROOT = pathlib.Path(__file__).resolve().parent.parent
RING = dt.timedelta(seconds=90)
NAMES = ("main", "release")
CLK_TCK = os.sysconf("SC_CLK_TCK")


def _database(name: str) -> str:
    return f"bench_busy_{name}"


def _deploy(run: Run, name: str) -> None:
    db = _database(name)
    run.admin.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
    run.admin.execute(f"CREATE DATABASE {db} TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C.UTF-8'")
    env = {**os.environ, "PGDATABASE": db}
    subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-v", "partitioned=off", "-v", "active_index=on",
                    "-f", str(ROOT / "stand-in" / "messenger_service.sql")], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    to = [] if name == "main" else ["--to", run.args.busy_release]
    subprocess.run(["sqitch", "--quiet", "deploy", *to, "--set", "scheduler=none", f"db:pg:{db}"], cwd=ROOT, env=env,
                   check=True, stdout=subprocess.DEVNULL)
    with _connect(run, name) as c:
        c.execute("UPDATE messenger.call_reaper_settings SET ring_timeout = %s, paused = false", (RING,))


def _connect(run: Run, name: str) -> psycopg.Connection:
    return psycopg.connect(run.args.dsn or "", dbname=_database(name), autocommit=True)


def _seed(run: Run, name: str, minute: dt.datetime, idle: bool = False) -> int:
    """Ringing calls due between :02 and :57 of `minute`, BUSY_RATE a second (none: idle)."""
    n = 0 if idle else int(55 * run.args.busy_rate)
    with _connect(run, name) as c:
        c.execute("DELETE FROM messenger.realtime_outbox")
        c.execute("DELETE FROM messenger.call_sessions")
        c.execute("DELETE FROM messenger.call_reaper_runs")
        if n:
            c.execute("INSERT INTO messenger.call_sessions (call_id, caller_user_id, callee_user_id, media_type,"
                      "  status, started_at, updated_at)"
                      " SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing', t, t"
                      "   FROM generate_series(0, %s - 1) AS g,"
                      "        LATERAL (SELECT %s + interval '2 seconds' + g * %s - %s) AS x (t)",
                      (n, minute, dt.timedelta(seconds=55 / n), RING))
        # Vacuumed, so no reader in the window sets a hint bit on a row deleted or inserted here
        # (with data checksums, the first such write after a checkpoint logs the whole page).
        c.execute("VACUUM (ANALYZE) messenger.call_sessions, messenger.realtime_outbox, messenger.call_reaper_runs")
        c.execute("CHECKPOINT")
    return n


def _cpu_s(pid: int) -> float:
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime


def _minute(run: Run, name: str, minute: dt.datetime, calls: int) -> dict:
    with _connect(run, name) as c:
        pid = c.execute("SELECT pg_backend_pid()").fetchone()[0]
        while (wait := (minute - c.execute("SELECT clock_timestamp()").fetchone()[0]).total_seconds()) > 0:
            time.sleep(min(wait, 0.5))
        cpu0, lsn0 = _cpu_s(pid), c.execute("SELECT pg_current_wal_insert_lsn()").fetchone()[0]
        c.execute("CALL messenger.run_call_reaper_ticks()")
        cpu1, wal = _cpu_s(pid), c.execute("SELECT pg_current_wal_insert_lsn() - %s::pg_lsn", (lsn0,)).fetchone()[0]
        # The ledger has a row per cycle of the release's and per tick of this tree's, whose deadline
        # closures leave none: the calls closed are the Missed calls, each pushed once.
        cycles, cycle_ms = c.execute(
            "SELECT count(*), coalesce(sum(duration_ms), 0)::float8"
            "  FROM messenger.call_reaper_runs WHERE started_at >= %s", (minute,)).fetchone()
        lags = [r[0] for r in c.execute(
            "SELECT extract(epoch FROM ended_at - (started_at + %s))::float8 * 1000 FROM messenger.call_sessions"
            " WHERE status = 'Missed'", (RING,)).fetchall()]
        closed = len(lags)
        pushes = c.execute("SELECT count(*), count(DISTINCT reference_id) FROM messenger.realtime_outbox"
                           " WHERE kind = 'CallMissed'").fetchone()
    if pushes != (closed, closed):
        log(f"busy-cost {name}: {closed} Missed, but {pushes[0]} CallMissed rows for {pushes[1]} calls")
    if not calls:
        r = {"name": name, "idle": True, "cycles": cycles, "cpu_ms": 1000 * (cpu1 - cpu0), "wal_b": float(wal)}
        log(f"busy-cost {name}, idle minute: {cycles} ledger rows; {r['cpu_ms']:.0f} CPU ms, {r['wal_b']:,.0f} B of WAL")
        return r
    r = {"name": name, "idle": False, "calls": calls, "closed": closed, "cycles": cycles,
         "cpu_ms": 1000 * (cpu1 - cpu0) / max(closed, 1), "wal_b": float(wal) / max(closed, 1),
         "cycle_ms": cycle_ms / max(closed, 1),
         "p50": quantile(lags, 0.5), "p99": quantile(lags, 0.99), "pushes": pushes[0]}
    log(f"busy-cost {name}: {closed} of {calls} closed in {cycles} cycles; {r['cpu_ms']:.3f} CPU ms and"
        f" {r['wal_b']:,.0f} B of WAL per call; lag p50 {r['p50']:.0f} ms, p99 {r['p99']:.0f} ms")
    return r


def run_busy_cost(run: Run) -> list[dict]:
    a = run.args
    if a.busy_rounds <= 0:
        return []
    for name in NAMES:
        _deploy(run, name)
    out = []
    # pg_cron's own runs in the bench database (its job_run_details rows) would be WAL in the window.
    has_cron = run.admin.execute("SELECT to_regclass('cron.job') IS NOT NULL").fetchone()[0]
    jobs = run.admin.execute("SELECT jobid, active FROM cron.job").fetchall() if has_cron else []
    for jobid, _ in jobs:
        run.admin.execute("SELECT cron.alter_job(%s, active := false)", (jobid,))
    try:
        # Both databases are seeded before a pair of minutes: nothing but the CALL writes in one.
        for i in range(a.busy_rounds + 1):
            idle = i == a.busy_rounds
            order = NAMES if i % 2 == 0 else tuple(reversed(NAMES))
            now = run.admin.execute("SELECT clock_timestamp()").fetchone()[0]
            first = now.replace(second=0, microsecond=0) + dt.timedelta(minutes=1 if now.second < 50 else 2)
            minutes = {name: first + dt.timedelta(minutes=k) for k, name in enumerate(order)}
            calls = {name: _seed(run, name, minutes[name], idle) for name in order}
            out += [_minute(run, name, minutes[name], calls[name]) for name in order]
    finally:
        for jobid, active in jobs:
            run.admin.execute("SELECT cron.alter_job(%s, active := %s)", (jobid, active))
        for name in NAMES:
            run.admin.execute(f"DROP DATABASE IF EXISTS {_database(name)} WITH (FORCE)")
    return out


def _median(runs: list[dict], name: str, key: str, idle: bool = False) -> float:
    return statistics.median(r[key] for r in runs if r["name"] == name and r["idle"] == idle)


def table_rows(runs: list[dict], release: str) -> list[list]:
    rows = []
    for name in NAMES:
        label = "this tree (deadline wake)" if name == "main" else f"{release} (15 s ticks)"
        rows.append([label, sum(1 for r in runs if r["name"] == name and not r["idle"]),
                     f"{_median(runs, name, 'closed'):,.0f}", f"{_median(runs, name, 'cycles'):.0f}",
                     f"{_median(runs, name, 'cpu_ms'):.3f}", f"{_median(runs, name, 'cycle_ms'):.3f}",
                     f"{_median(runs, name, 'wal_b'):,.0f}",
                     f"{_median(runs, name, 'p50'):,.0f}", f"{_median(runs, name, 'p99'):,.0f}",
                     f"{_median(runs, name, 'cpu_ms', idle=True):,.0f}", f"{_median(runs, name, 'wal_b', idle=True):,.0f}"])
    return rows


def measured(runs: list[dict]) -> tuple[dict, list]:
    cpu = _median(runs, "main", "cpu_ms") / _median(runs, "release", "cpu_ms")
    wal = _median(runs, "main", "wal_b") / _median(runs, "release", "wal_b")
    idle = _median(runs, "main", "cpu_ms", idle=True) / max(_median(runs, "release", "cpu_ms", idle=True), 1)
    ledger = statistics.median(r["cycles"] / max(r["closed"], 1) for r in runs if r["name"] == "main" and not r["idle"])
    passes = "; ".join(f"{r['cpu_ms']:.3f} ms {r['wal_b']:,.0f} B" for r in runs if r["name"] == "main" and not r["idle"])
    return {"busy_cpu": (cpu, ""), "busy_wal": (wal, ""), "busy_ledger": (ledger, "")}, [
        ("a steady stream of Missed calls, this tree's passes: CPU per closed call, WAL per closed call", passes),
        ("an idle minute's CPU, this tree / the latest release (each CALLed as its job)", f"{idle:.2f}x")]


def env_defaults() -> dict:
    env = os.environ.get
    return {"busy_rounds": int(env("BUSY_ROUNDS", "1")),
            "busy_rate": float(env("BUSY_RATE", "10")),
            "busy_release": env("BUSY_RELEASE", "@v2.0.0")}
