"""How long after its deadline the scheduled job closes a Missed call, with and without the
deadline wake (settings.wake_at_deadline), under the real pg_cron job and pgbench as the product.

pgbench inserts Ringing calls at PRECISION_RATE a second for PRECISION_SECONDS per mode: 7 in 10
never answered, 3 in 10 answered PRECISION_ANSWER_EARLY_MS before their deadline (pgbench's
\\sleep, so a late client answers late: those are counted, not judged). ring_timeout is
PRECISION_RING_S for the run (the lag does not depend on it; a short one lets more calls fall
due). Per mode: the lag (ended_at - (started_at + ring_timeout)) of every Missed call whose
deadline fell in the window, p50 / p99 / max; CallMissed rows per call (exactly once); the job's
slot-seconds per minute (pg_stat_activity sampled every 0.1 s: a backend running the job's CALL);
the reaper's own time per closed call (the ledger's cycle durations over the calls they closed)
and its cycles. The modes alternate, on first: the pg_cron job with the wake (PRECISION_SECONDS),
without (PRECISION_OFF_SECONDS), then scripts/reaper-loop, the app-side loop, with the wake and
the pg_cron job inactive (PRECISION_LOOP_SECONDS; it holds no job slot). 0 seconds skips a mode.
"""

from __future__ import annotations

import datetime as dt
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import threading
import time

from common import Run, log, quantile

ANSWERED_SHARE = 3  # in 10

RING_SQL = r"""\set n random(1, 999999999999)
INSERT INTO messenger.call_sessions (call_id, caller_user_id, callee_user_id, media_type, status, started_at, updated_at)
VALUES (('00000000-0000-0000-0000-' || lpad(to_hex(:n), 12, '0'))::uuid, gen_random_uuid(), gen_random_uuid(),
        'Audio', 'Ringing', clock_timestamp(), clock_timestamp());
"""
ANSWER_SQL = RING_SQL + r"""\sleep {sleep_ms} ms
UPDATE messenger.call_sessions SET status = 'Answered', answered_at = clock_timestamp(), updated_at = clock_timestamp()
 WHERE call_id = ('00000000-0000-0000-0000-' || lpad(to_hex(:n), 12, '0'))::uuid AND status = 'Ringing';
"""


def _pgbench(run: Run, seconds: float, files: list[str]) -> subprocess.Popen:
    a = run.args
    clients = max(4, int(a.precision_rate * a.precision_ring_s * ANSWERED_SHARE / 10) + 8)
    cmd = ["pgbench", "-n", "-c", str(clients), "-j", "2", "-R", str(a.precision_rate), "-T", str(int(seconds)),
           "--max-tries=1"]
    for f, weight in zip(files, (10 - ANSWERED_SHARE, ANSWERED_SHARE), strict=True):
        cmd += ["-f", f"{f}@{weight}"]
    if a.dsn:
        cmd.append(a.dsn)
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _sample_slots(run: Run, stop: threading.Event, out: list[int]) -> None:
    with run.connect(autocommit=True) as c:
        while not stop.is_set():
            out.append(c.execute("SELECT count(*) FROM pg_stat_activity"
                                 " WHERE query = 'CALL messenger.run_call_reaper_ticks()' AND state = 'active'"
                                 ).fetchone()[0])
            time.sleep(0.1)


LOOP = pathlib.Path(__file__).resolve().parent.parent / "scripts" / "reaper-loop"
JOB_ACTIVE_SQL = "SELECT cron.alter_job(j.jobid, active := %s) FROM cron.job AS j WHERE j.jobname = 'messenger-call-timeout-reaper'"
CALLS_IN_FLIGHT_SQL = ("SELECT count(*) FROM pg_stat_activity WHERE query = 'CALL messenger.run_call_reaper_ticks()'"
                       " AND state = 'active'")


def _start_loop(run: Run) -> subprocess.Popen:
    """The app-side loop in place of the pg_cron job: the job made inactive, its CALL left to end."""
    admin = run.admin
    admin.execute(JOB_ACTIVE_SQL, (False,))
    deadline = time.monotonic() + 75
    while time.monotonic() < deadline and admin.execute(CALLS_IN_FLIGHT_SQL).fetchone()[0]:
        time.sleep(0.2)
    return subprocess.Popen([sys.executable, str(LOOP), "--dsn", run.args.dsn or ""],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _stop_loop(run: Run, loop: subprocess.Popen) -> None:
    loop.send_signal(signal.SIGTERM)
    loop.wait(10)
    run.admin.execute(JOB_ACTIVE_SQL, (True,))


def one_mode(run: Run, wake: bool, seconds: float, loop: bool = False) -> dict:
    a, admin = run.args, run.admin
    admin.execute("DELETE FROM messenger.call_sessions WHERE started_at > now() - interval '1 day'"
                  " AND started_at < now() + interval '1 day'")
    admin.execute("UPDATE messenger.call_reaper_settings SET wake_at_deadline = %s, ring_timeout = %s,"
                  " paused = false", (wake, dt.timedelta(seconds=a.precision_ring_s)))
    looping = _start_loop(run) if loop else None
    # A CALL of the job running (on pg_cron 1.4 the next starts at the minute): it reads the
    # setting at each nap, so it runs the mode from here on.
    deadline = time.monotonic() + 75
    while not loop and time.monotonic() < deadline and not admin.execute(CALLS_IN_FLIGHT_SQL).fetchone()[0]:
        time.sleep(0.2)
    with tempfile.TemporaryDirectory() as d:
        ring = pathlib.Path(d, "ring.sql")
        answer = pathlib.Path(d, "answer.sql")
        ring.write_text(RING_SQL)
        answer.write_text(ANSWER_SQL.format(sleep_ms=int(a.precision_ring_s * 1000 - a.precision_answer_early_ms)))
        t0 = admin.execute("SELECT clock_timestamp()").fetchone()[0]
        wal0 = admin.execute("SELECT pg_current_wal_insert_lsn()").fetchone()[0]
        stop, slots = threading.Event(), []
        sampler = threading.Thread(target=_sample_slots, args=(run, stop, slots), daemon=True)
        sampler.start()
        bench = _pgbench(run, seconds, [str(ring), str(answer)])
        out, _ = bench.communicate()
        if bench.returncode:
            log(f"precision: pgbench failed ({bench.returncode}):\n{out}")
        # The last calls' deadlines, and a polling interval for the ticks to close them.
        time.sleep(a.precision_ring_s + 16)
        stop.set()
        sampler.join()
        t1 = admin.execute("SELECT clock_timestamp()").fetchone()[0]
    if looping:
        _stop_loop(run, looping)
    admin.execute("SELECT messenger.pause_call_reaper()")
    ring_timeout = dt.timedelta(seconds=a.precision_ring_s)
    lags = [r[0] for r in admin.execute(
        "SELECT extract(epoch FROM c.ended_at - (c.started_at + %s))::float8 * 1000"
        "  FROM messenger.call_sessions AS c"
        " WHERE c.status = 'Missed' AND c.started_at >= %s AND c.started_at + %s <= %s",
        (ring_timeout, t0, ring_timeout, t1)).fetchall()]
    twice = admin.execute("SELECT count(*) FROM (SELECT reference_id FROM messenger.realtime_outbox"
                          " WHERE created_at >= %s AND kind = 'CallMissed' GROUP BY reference_id"
                          " HAVING count(*) > 1) AS x", (t0,)).fetchone()[0]
    still = admin.execute("SELECT count(*) FROM messenger.call_sessions WHERE status = 'Ringing'"
                          " AND started_at >= %s AND started_at + %s <= %s", (t0, ring_timeout, t1)).fetchone()[0]
    answered = admin.execute("SELECT count(*) FROM messenger.call_sessions WHERE status = 'Answered'"
                             " AND started_at >= %s", (t0,)).fetchone()[0]
    cycles, ms, closed = admin.execute(
        "SELECT count(*), coalesce(sum(duration_ms), 0)::float8, coalesce(sum(missed_count + failed_count), 0)"
        "  FROM messenger.call_reaper_runs WHERE started_at >= %s AND started_at < %s", (t0, t1)).fetchone()
    wal = admin.execute("SELECT pg_current_wal_insert_lsn() - %s::pg_lsn", (wal0,)).fetchone()[0]
    minutes = (t1 - t0).total_seconds() / 60
    r = {"wake": wake, "loop": loop, "seconds": seconds, "missed": len(lags), "p50": quantile(lags, 0.5) if lags else None,
         "p99": quantile(lags, 0.99) if lags else None, "max": max(lags) if lags else None,
         "twice": twice, "still_ringing": still, "answered": answered, "cycles": cycles,
         "ms_per_call": ms / closed if closed else None, "slot_s_per_min": sum(slots) * 0.1 / minutes,
         "wal_per_min": float(wal) / minutes, "pgbench": out.strip().splitlines()[-1:] if out else []}
    log(f"precision, {_mode(r)}: {len(lags)} missed, lag p50 {r['p50'] or 0:.1f} ms,"
        f" p99 {r['p99'] or 0:.1f} ms, max {r['max'] or 0:.1f} ms; {cycles} cycles;"
        f" {r['slot_s_per_min']:.1f} slot-s/min")
    return r


def run_precision(run: Run) -> list[dict]:
    if not run.scheduled:
        log("precision: no active pg_cron job, skipped")
        return []
    a = run.args
    saved = run.admin.execute("SELECT ring_timeout, wake_at_deadline FROM messenger.call_reaper_settings").fetchone()
    try:
        return [one_mode(run, wake, seconds, loop) for wake, seconds, loop in
                ((True, a.precision_seconds, False), (False, a.precision_off_seconds, False),
                 (True, a.precision_loop_seconds, True)) if seconds > 0]
    finally:
        run.admin.execute("UPDATE messenger.call_reaper_settings SET ring_timeout = %s, wake_at_deadline = %s",
                          saved)
        run.admin.execute("SELECT messenger.pause_call_reaper()")


def _mode(r: dict) -> str:
    return f"{'app-side loop' if r.get('loop') else 'pg_cron job'}, wake {'on' if r['wake'] else 'off'}"


def table_rows(runs: list[dict]) -> list[list]:
    def ms(v):
        return "-" if v is None else f"{v:.1f}"
    return [[_mode(r), f"{r['seconds']:.0f}", r["missed"], ms(r["p50"]), ms(r["p99"]),
             ms(r["max"]), r["twice"], r["still_ringing"], r["cycles"],
             "-" if r["ms_per_call"] is None else f"{r['ms_per_call']:.3f}", f"{r['slot_s_per_min']:.1f}",
             f"{r['wal_per_min'] / 1024:,.0f}"] for r in runs]


def measured(runs: list[dict]) -> tuple[dict, list]:
    values = {}
    on = next((r for r in runs if r["wake"] and not r.get("loop") and r["p99"] is not None), None)
    off = next((r for r in runs if not r["wake"]), None)
    if on:
        versus = f"; wake off: p99 {off['p99']:.0f} ms" if off and off["p99"] is not None else ""
        values["precision_p99"] = (on["p99"], f"{on['missed']:,} Missed calls over {on['seconds']:.0f} s{versus}")
        values["precision_max"] = (on["max"], f"p50 {on['p50']:.1f} ms")
    loop = next((r for r in runs if r.get("loop") and r["p99"] is not None), None)
    if loop:
        values["precision_loop_p99"] = (loop["p99"], f"{loop['missed']:,} Missed calls over {loop['seconds']:.0f} s")
        values["precision_loop_max"] = (loop["max"], f"p50 {loop['p50']:.1f} ms")
    if runs:
        values["precision_twice"] = (sum(r["twice"] for r in runs), "CallMissed rows beyond one per call, every mode")
    return values, []


def env_defaults() -> dict:
    env = os.environ.get
    return {"precision_seconds": float(env("PRECISION_SECONDS", "300")),
            "precision_off_seconds": float(env("PRECISION_OFF_SECONDS", "120")),
            "precision_loop_seconds": float(env("PRECISION_LOOP_SECONDS", "300")),
            "precision_rate": float(env("PRECISION_RATE", "50")),
            "precision_ring_s": float(env("PRECISION_RING_S", "3")),
            "precision_answer_early_ms": float(env("PRECISION_ANSWER_EARLY_MS", "20"))}
