"""WAL an idle cycle writes: by hand (with an as_of, and on the clock), and scheduled by the real
pg_cron job. An idle cycle on the clock writes nothing of the reaper's: the goal is 0 bytes on
the messenger schema's relations, pg_cron's records shown apart.

Each window starts with a CHECKPOINT and one warm-up cycle, so the full-page images (FPIs) of
the pages every cycle writes (the counters row, the ledger's last page) fall before it. What
FPIs remain in the window are pages a cycle touched for the first time since that checkpoint
(the ledger's run_id key is random, so most cycles land on another leaf of it); a server pays
them again after every checkpoint, so they are reported apart from the goal's bytes.

pg_walinspect names every record of the window: bytes without FPIs (record length minus image
length), FPI bytes, and the relation of each record's first block.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from collections import defaultdict

import psycopg
from common import CYCLE_SQL, Run, cycle_as_of, log

BLOCK_REF = re.compile(r"rel (\d+)/(\d+)/(\d+)")


def run_total(conn: psycopg.Connection) -> int:
    """Cycles the reaper has counted: the exporter's run_total under every result (runs_completed
    holds the idle cycles on the clock, which leave no ledger row, and 2.0.0's idle ledger rows);
    else ledger rows."""
    try:
        with conn.transaction():
            return conn.execute("SELECT runs_completed + runs_skipped + runs_rolled_back"
                                " FROM messenger.call_reaper_metrics()").fetchone()[0]
    except (psycopg.errors.UndefinedColumn, psycopg.errors.UndefinedFunction):
        return conn.execute("SELECT count(*) FROM messenger.call_reaper_runs").fetchone()[0]


def insert_lsn(conn: psycopg.Connection) -> str:
    return conn.execute("SELECT pg_current_wal_insert_lsn()").fetchone()[0]


def seed_ledger(run: Run) -> int:
    """Fills the run ledger as a server keeps it (retention / polling_interval rows, copies of
    one idle cycle's row): the ledger's indexes then have the size whose pages the cycles
    touch, not the few the bench's truncated ledger has."""
    a = run.admin
    with run.connect(autocommit=True) as c:
        c.execute(CYCLE_SQL, (None, cycle_as_of()))
    # The oldest an hour inside the retention: the hourly purge job leaves them all alone.
    return a.execute(
        """INSERT INTO messenger.call_reaper_runs
           SELECT (jsonb_populate_record(NULL::messenger.call_reaper_runs, to_jsonb(r)
                   || jsonb_build_object('run_id', gen_random_uuid(), 'started_at', t, 'finished_at', t))).*
             FROM (SELECT * FROM messenger.call_reaper_runs LIMIT 1) AS r,
                  messenger.call_reaper_settings AS s,
                  generate_series(now() - s.retention + interval '1 hour', now() - s.polling_interval,
                                  s.polling_interval) AS t""").rowcount


def records(run: Run, lsn0: str, lsn1: str, cycles: int) -> dict:
    """What the window [lsn0, lsn1) holds, per cycle."""
    a = run.admin
    # pg_walinspect reads only flushed WAL, and a window with no commit in it may never be flushed
    # (the WAL writer writes whole pages): a transaction id's commit after lsn1 (asynchronous, it
    # wrote nothing else) has the WAL writer flush it within wal_writer_delay.
    a.execute("SELECT pg_current_xact_id()")
    t0 = time.monotonic()
    while not a.execute("SELECT pg_current_wal_flush_lsn() >= %s::pg_lsn", (lsn1,)).fetchone()[0]:
        if time.monotonic() - t0 > 10:
            raise RuntimeError(f"WAL not flushed to {lsn1} after 10 s")
        time.sleep(0.05)
    # An empty window (nothing written at all) is an error to pg_walinspect, not an empty set.
    rows = a.execute("SELECT resource_manager, record_type, record_length, fpi_length, block_ref"
                     "  FROM pg_get_wal_records_info(%s, %s)", (lsn0, lsn1)).fetchall() if lsn1 != lsn0 else []
    delta = a.execute("SELECT %s::pg_lsn - %s::pg_lsn", (lsn1, lsn0)).fetchone()[0]
    db = a.execute("SELECT oid FROM pg_database WHERE datname = current_database()").fetchone()[0]
    names: dict[tuple[int, int, int], str] = {}
    by_rel: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    # Whose: the reaper's relations (schema messenger), pg_cron's (schema cron), the rest (commit
    # records, the server's own).
    by_owner: dict[str, int] = defaultdict(int)
    nofpi = fpi = images = 0
    for rmgr, rtype, length, fpi_len, block_ref in rows:
        nofpi += length - fpi_len
        fpi += fpi_len
        images += (block_ref or "").count("FPW")
        m = BLOCK_REF.search(block_ref or "")
        if m:
            key = tuple(int(x) for x in m.groups())
            if key not in names:
                names[key] = _relation(a, key, db)
            label = names[key]
        else:
            label = f"({rmgr} {rtype}, no relation)"
        by_rel[label][0] += length - fpi_len
        by_rel[label][1] += fpi_len
        by_owner[{"messenger": "reaper", "cron": "pg_cron"}.get(label.split(".")[0], "other")] += length
    top = sorted(by_rel.items(), key=lambda kv: -sum(kv[1]))[:6]
    n = max(cycles, 1)
    return {"cycles": cycles, "lsn_bytes": delta / n, "bytes": nofpi / n, "fpi": fpi / n, "images": images / n,
            "records": len(rows) / n, "top": [(label, b / n, f / n) for label, (b, f) in top],
            "owners": {k: by_owner[k] for k in ("reaper", "pg_cron", "other")}}


def _relation(a: psycopg.Connection, key: tuple[int, int, int], db: int) -> str:
    spc, rel_db, filenode = key
    if rel_db not in (0, db):
        return f"database {rel_db} file {filenode}"
    # Tablespace 0 is the database's default; pg_global's relations are the shared catalogs.
    name = a.execute("SELECT pg_filenode_relation(CASE WHEN %s = (SELECT oid FROM pg_tablespace"
                     " WHERE spcname = 'pg_default') THEN 0 ELSE %s END, %s)::regclass::text",
                     (spc, spc, filenode)).fetchone()[0]
    return name or f"file {filenode}"


def hand_run(run: Run, clock: bool = False) -> dict:
    """IDLE_WAL_CYCLES cycles of SELECT * FROM messenger.reap_call_timeouts(as_of => ...) in
    autocommit, back to back; clock: reap_call_timeouts() with no as_of, as the job runs it (the
    bench's calls live in 2099, so nothing is due now)."""
    n = run.args.idle_wal_cycles
    cycle = (("SELECT * FROM messenger.reap_call_timeouts()", ()) if clock else
             ("SELECT * FROM messenger.reap_call_timeouts(as_of => %s)", (cycle_as_of(),)))
    with run.connect(autocommit=True) as c:
        c.execute(CYCLE_SQL, (None, cycle_as_of()))  # plans the session's statements
        run.admin.execute("CHECKPOINT")
        c.execute(*cycle)
        _off_the_minute()
        total0, lsn0 = run_total(c), insert_lsn(c)
        for _ in range(n):
            c.execute(*cycle)
        lsn1, total1 = insert_lsn(c), run_total(c)
    r = records(run, lsn0, lsn1, n) | {"counted": total1 - total0, "ran": n}
    log(f"idle WAL by hand{' on the clock' if clock else ''}: {r['bytes']:,.0f} B/cycle without FPIs,"
        f" {r['fpi']:,.0f} B/cycle of FPIs over {n} cycles")
    return r


def _off_the_minute() -> None:
    """pg_cron starts its jobs (the paused reaper's CALL, the warden) at the top of the minute:
    a short window that stays clear of it holds the reaper's records only."""
    second = dt.datetime.now().second
    if second >= 55 or second < 2:
        time.sleep((62 - second) % 60)


def scheduled(run: Run) -> dict | None:
    """The deployed job, resumed, for about IDLE_WAL_SECONDS: cycles at the polling interval
    with the clock as as_of (nothing is due: the bench's calls live in 2099). The window runs
    from just after one cycle to just after a later one; the WAL between holds those cycles
    and everything pg_cron recorded meanwhile, for this job and the lock warden's."""
    if not run.args.idle_wal_seconds:
        return None
    if not run.scheduled:
        log("idle WAL scheduled: no active pg_cron job, skipped")
        return None
    a = run.admin
    poll = float(a.execute("SELECT extract(epoch FROM polling_interval) FROM messenger.call_reaper_settings").fetchone()[0])
    a.execute("SELECT messenger.resume_call_reaper()")
    try:
        a.execute("CHECKPOINT")
        _next_cycle(a, run_total(a), 75 + poll)  # the warm-up: the job starts on the minute
        total0, lsn0, t0 = run_total(a), insert_lsn(a), time.monotonic()
        time.sleep(max(run.args.idle_wal_seconds - poll, 0))
        while time.monotonic() - t0 < run.args.idle_wal_seconds:
            _next_cycle(a, run_total(a), 2 * poll)
        total1, lsn1, t1 = run_total(a), insert_lsn(a), time.monotonic()
    finally:
        a.execute("SELECT messenger.pause_call_reaper()")
    ticks = round((t1 - t0) / poll)
    r = records(run, lsn0, lsn1, total1 - total0) | {"counted": total1 - total0, "ran": ticks, "seconds": t1 - t0}
    r["per_minute"] = {k: b * 60 / (t1 - t0) for k, b in r["owners"].items()}
    log(f"idle WAL scheduled: {r['bytes']:,.0f} B/cycle without FPIs, {r['fpi']:,.0f} B/cycle of FPIs,"
        f" {total1 - total0} cycles counted in {t1 - t0:.0f} s ({ticks} ticks of {poll:g} s); per minute"
        f" {r['per_minute']['reaper']:,.0f} B the reaper's, {r['per_minute']['pg_cron']:,.0f} B pg_cron's,"
        f" {r['per_minute']['other']:,.0f} B other (commits, the server's)")
    return r


def _next_cycle(a: psycopg.Connection, total: int, limit_s: float) -> None:
    """Returns right after the reaper counted its next cycle (polled every 0.2 s, read-only)."""
    t0 = time.monotonic()
    while run_total(a) == total:
        if time.monotonic() - t0 > limit_s:
            raise SystemExit(f"bench: the scheduled reaper ran no cycle in {limit_s:.0f} s")
        time.sleep(0.2)


def run_idle_wal(run: Run) -> dict | None:
    if not run.admin.execute("SELECT count(*) FROM pg_extension WHERE extname = 'pg_walinspect'").fetchone()[0]:
        log("idle WAL: pg_walinspect is not installed in this database, skipped")
        return None
    ledger = seed_ledger(run)
    log(f"idle WAL: run ledger filled with {ledger:,} rows (retention / polling_interval)")
    return {"ledger_rows": ledger, "hand": hand_run(run), "clock": hand_run(run, clock=True),
            "scheduled": scheduled(run)}


def measured(r: dict) -> tuple[dict, list]:
    values = {}
    uncounted = 0
    windows = (("by hand", r["hand"]), ("by hand on the clock", r.get("clock")), ("scheduled", r["scheduled"]))
    if r["hand"]:
        values["idle_wal_hand"] = (r["hand"]["bytes"], f"{r['hand']['fpi']:,.0f} B/cycle of FPIs beside it")
    if r.get("clock"):
        w = r["clock"]
        values["idle_wal_clock"] = (w["owners"]["reaper"] / max(w["cycles"], 1),
                                    f"{w['bytes']:,.0f} B/cycle in all, FPIs included: {w['fpi']:,.0f}")
    if r["scheduled"]:
        m = r["scheduled"]["per_minute"]
        beside = f"pg_cron's {m['pg_cron']:,.0f} B/min, other (commits, the server's) {m['other']:,.0f} B/min beside it"
        values["idle_wal_scheduled"] = (m["reaper"], beside)
    for _, w in windows:
        if w:
            uncounted += w["ran"] - w["counted"]
    values["idle_uncounted"] = (uncounted, "; ".join(f"{name}: {w['counted']} counted of {w['ran']}"
                                                     for name, w in windows if w))
    return values, []
