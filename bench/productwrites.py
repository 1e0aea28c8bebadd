"""What the reaper's index adds to the product's own writes (bench part "product-writes").

An index on a column turns every UPDATE of that column into a non-HOT update: a new index
entry in every index of the table, and more WAL. The product's "progress" of an answered call
(its signalling update) changes updated_at only, which the released ix_call_due's key included
(call_due_key) and ix_call_due leaves out ((status, started_at, call_id)); and where the service
has its own index of active calls (the stand-in's ix_call_active), the deploy builds no index at
all and the claims read the product's. So this part runs the service's own statements at a
fixed rate on a copy of call_sessions (bench_pw.call_sessions: the product's columns,
constraints and indexes, the HISTORY calls, a pool of live calls) under each index shape in
turn, interleaved round by round:

  none         the product's own indexes only: the product without the reaper
  deployed     plus the indexes the deploy added to call_sessions (messenger.call_reaper_indexes):
               none beside the product's index of active calls, and then these are the runs of
               'none' (the same table, the same indexes), not runs of their own
  ix_call_due  plus ix_call_due (deploy/indexes/ix_call_due.sql's definition), which the deploy
               builds where the product has no index of active calls
  v1.2.0       plus the released ix_call_due (v1.0.0-v1.2.0) on call_due_key, for comparison
  per-status   plus (started_at, call_id) WHERE status = 'Ringing' and the same WHERE status =
               'Answered' instead: ix_call_due's claims in two indexes, status out of the key

Per run: HOT updates (pg_stat_user_tables deltas), WAL per statement (insert-LSN delta, and
without full-page images through pg_walinspect), client-side p50/p95/p99. Then, per shape, what
its claims cost: buffers and time of one claim per phase with nothing due at 100 and at
PW_IDLE_LIVE live calls, and of a first batch from a BACKLOG-call backlog, on the product's own
index (what the deployed claims read beside it) and on the candidates.
"""

from __future__ import annotations

import datetime as dt
import random
import re
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path

import psycopg
from common import AS_OF, RECENT, Pace, Run, log, quantile, quantile_interval, run_paced
from phases import by_status

T = "bench_pw.call_sessions"
APP = "bench-product-writes"
SHAPES = ("none", "deployed", "ix_call_due", "v1.2.0", "per-status")
DUE_SCRIPT = Path(__file__).resolve().parents[1] / "deploy" / "indexes" / "ix_call_due.sql"
RELEASED = ("(status, messenger.call_due_key(status, started_at, updated_at), call_id)"
            " WHERE messenger.call_due_key(status, started_at, updated_at) IS NOT NULL")

NEW = f"""INSERT INTO {T} (call_id, caller_user_id, callee_user_id, media_type, status, started_at, updated_at)
          VALUES (%s, %s, %s, 'Audio', 'Ringing', %s, %s)"""
ANSWER = f"UPDATE {T} SET status = 'Answered', answered_at = %s, updated_at = %s WHERE call_id = %s AND status = 'Ringing'"
# The signalling update of an answered call: its only liveness signal (a
# call with no progress for stale_timeout is failed).
PROGRESS = f"UPDATE {T} SET updated_at = %s WHERE call_id = %s AND status = 'Answered'"
END = (f"UPDATE {T} SET status = 'Ended', end_reason = 'Hangup', ended_at = %s, updated_at = %s,"
       f" duration_seconds = 3 WHERE call_id = %s AND status = 'Answered'")
# A client's cycle: a new call rung, answered, four progress updates of calls of the pool, the
# new call ended. Progress is what a call does most; the pool keeps its size.
LIFE = ("new", "answer", "progress", "progress", "progress", "progress", "end")

# Live pool: Answered calls with recent progress (a share LONG of them started before the stale
# window: calls still talking after 2 h), Ringing calls inside the answer window.
POOL_SQL = f"""
INSERT INTO {T} (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Answered', s, s + interval '5 seconds',
       %(as_of)s::timestamptz - random() * interval '30 minutes'
  FROM (SELECT CASE WHEN random() < %(long)s
                    THEN %(as_of)s::timestamptz - interval '2 hours 10 minutes' - random() * interval '3 hours'
                    ELSE %(as_of)s::timestamptz - interval '35 minutes' - random() * interval '80 minutes' END
          FROM generate_series(1, %(answered)s)) AS t (s)
UNION ALL
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing', s, NULL, s
  FROM (SELECT %(as_of)s::timestamptz - random() * interval '40 seconds' FROM generate_series(1, %(ringing)s)) AS t (s)"""
BACKLOG_SQL = f"""
INSERT INTO {T} (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing', s, NULL, s
  FROM (SELECT %(as_of)s::timestamptz - interval '46 seconds' - random() * interval '6 hours'
          FROM generate_series(1, %(ringing)s)) AS t (s)
UNION ALL
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Video', 'Answered', u - interval '10 minutes',
       u - interval '9 minutes', u
  FROM (SELECT %(as_of)s::timestamptz - interval '2 hours 1 second' - random() * interval '1 day'
          FROM generate_series(1, %(answered)s)) AS t (u)"""


def due_definition() -> str:
    """ix_call_due's definition as its deploy script sets it (psql's doubled quotes undone)."""
    m = re.search(r"^\\set definition '(.*)'$", DUE_SCRIPT.read_text(), re.MULTILINE)
    if not m:
        sys.exit(f"bench: cannot read ix_call_due's definition from {DUE_SCRIPT}")
    return m.group(1).replace("''", "'")


def shape_indexes(run: Run) -> dict[str, list[str]]:
    """The DDL each shape adds to the product's indexes. 'deployed' is what the deploy added to
    call_sessions, read from the catalog (its own index, where it built one)."""
    deployed = [re.sub(r"^CREATE INDEX (\S+) ON (ONLY )?messenger\.call_sessions",
                       lambda m: f"CREATE INDEX pw_deployed_{m.group(1)} ON {T}", ddl)
                for (ddl,) in run.admin.execute(
                    "SELECT pg_get_indexdef(i.indexrelid) FROM messenger.call_reaper_indexes AS r"
                    "  JOIN pg_index AS i ON i.indexrelid = to_regclass(format('%%I.%%I', r.index_schema, r.index_name))"
                    " WHERE i.indrelid = 'messenger.call_sessions'::regclass ORDER BY r.index_name").fetchall()]
    return {"none": [], "deployed": deployed, "ix_call_due": [f"CREATE INDEX pw_due ON {T} {due_definition()}"],
            "v1.2.0": [f"CREATE INDEX pw_released ON {T} {RELEASED}"],
            "per-status": [f"CREATE INDEX pw_ringing ON {T} (started_at, call_id) WHERE status = 'Ringing'",
                           f"CREATE INDEX pw_answered ON {T} (started_at, call_id) WHERE status = 'Answered'"]}


def same_as(ddl: dict[str, list[str]], shape: str) -> str | None:
    """The other shape whose runs are this one's: the same indexes under other names."""
    def key(x: str) -> list[str]:
        return sorted(re.sub(r"^CREATE INDEX \S+ ", "", d) for d in ddl[x])
    return next((o for o in SHAPES if o != shape and ddl.get(o) is not None and key(o) == key(shape)), None) \
        if shape == "deployed" else None


KEY = "messenger.call_due_key(s.status, s.started_at, s.updated_at)"
DUE = "messenger.call_is_due(s.status, s.started_at, s.updated_at, %(cutoff)s)"
# Each shape's claim of one batch per phase: the deployed one as _reap_claim_lane runs it (by
# started_at, phase 2 too); the same index ordered by updated_at for phase 2 (which
# has to read and sort every candidate); the released index and claim.
CLAIMS = {
    "ix_call_active (the product's, deployed)": {
        "Ringing": f"s.status = 'Ringing' AND {DUE} ORDER BY s.started_at, s.call_id",
        "Answered": f"s.status = 'Answered' AND {DUE} ORDER BY s.started_at, s.call_id"},
    "ix_call_due": {"Ringing": f"s.status = 'Ringing' AND {DUE} ORDER BY s.started_at, s.call_id",
                    "Answered": f"s.status = 'Answered' AND {DUE} ORDER BY s.started_at, s.call_id"},
    "ix_call_due, Answered by updated_at": {
        "Ringing": f"s.status = 'Ringing' AND {DUE} ORDER BY s.started_at, s.call_id",
        "Answered": f"s.status = 'Answered' AND {DUE} ORDER BY s.updated_at, s.call_id"},
    "v1.2.0": {"Ringing": f"s.status = 'Ringing' AND {KEY} <= %(cutoff)s ORDER BY {KEY}, s.call_id",
               "Answered": f"s.status = 'Answered' AND {KEY} <= %(cutoff)s ORDER BY {KEY}, s.call_id"},
}
CLAIM_INDEXES = {"ix_call_active (the product's, deployed)": "none", "ix_call_due": "ix_call_due", "ix_call_due, Answered by updated_at": "ix_call_due",
                 "v1.2.0": "v1.2.0"}


def setup(run: Run) -> None:
    """bench_pw.call_sessions: the product's table as deployed, without the reaper's indexes."""
    a, t0 = run.admin, time.perf_counter()
    a.execute("DROP SCHEMA IF EXISTS bench_pw CASCADE")
    a.execute("CREATE SCHEMA bench_pw")
    a.execute(f"CREATE TABLE {T} (LIKE messenger.call_sessions INCLUDING DEFAULTS INCLUDING CONSTRAINTS)"
              " WITH (autovacuum_enabled = false)")
    # Every index of the product's (a partitioned table's on its parent), not the reaper's.
    for (ddl,) in a.execute(
            "SELECT pg_get_indexdef(i.indexrelid) FROM pg_index AS i JOIN pg_class AS x ON x.oid = i.indexrelid"
            " WHERE i.indrelid = 'messenger.call_sessions'::regclass"
            "   AND pg_get_indexdef(i.indexrelid) NOT LIKE '%%call_due_key%%'"
            "   AND NOT EXISTS (SELECT FROM messenger.call_reaper_indexes AS r"
            "                    WHERE r.index_schema = 'messenger' AND r.index_name = x.relname)"
            ).fetchall():
        a.execute(re.sub(r"^CREATE (UNIQUE )?INDEX (\S+) ON (ONLY )?messenger\.call_sessions",
                         lambda m: f"CREATE {m.group(1) or ''}INDEX pw_{m.group(2)} ON {T}", ddl))
    a.execute(f"INSERT INTO {T} SELECT * FROM messenger.call_sessions WHERE started_at <= %s", (AS_OF - RECENT,))
    a.execute(f"VACUUM (ANALYZE) {T}")
    run.seeding_s += time.perf_counter() - t0


def reset(run: Run, shape: str, ddl: dict[str, list[str]], answered: int, ringing: int, backlog: int = 0) -> None:
    """The recent calls replaced by a fresh pool in the free space VACUUM left (as a service's
    table reuses it), then the shape's indexes built and a CHECKPOINT, so every run starts
    from the same page layout and pays the same full-page images."""
    a, t0 = run.admin, time.perf_counter()
    for (name,) in a.execute("SELECT indexrelid::regclass::text FROM pg_index WHERE indrelid = %s::regclass"
                             "   AND indexrelid::regclass::text ~ '^bench_pw\\.pw_(due|released|ringing|answered|deployed_.*)$'",
                             (T,)).fetchall():
        a.execute(f"DROP INDEX {name}")
    a.execute(f"DELETE FROM {T} WHERE started_at > %s", (AS_OF - RECENT,))
    a.execute(f"VACUUM {T}")
    a.execute(POOL_SQL, {"as_of": AS_OF, "answered": answered, "ringing": ringing, "long": run.args.pw_long})
    if backlog:
        a.execute(BACKLOG_SQL, {"as_of": AS_OF, "ringing": backlog // 2, "answered": backlog - backlog // 2})
    for d in ddl[shape]:
        a.execute(d)
    a.execute(f"ANALYZE {T}")
    a.execute("CHECKPOINT")
    run.seeding_s += time.perf_counter() - t0


def client(run: Run, pool: list, stop: threading.Event, lat: dict, errors: list, seed: int) -> None:
    rnd = random.Random(seed)
    sql = {"new": NEW, "answer": ANSWER, "progress": PROGRESS, "end": END}
    try:
        with run.connect(autocommit=True, application_name=APP) as c:
            pace = Pace(run.args.pw_rate)
            warm = True  # the first life prepares the statements: not timed
            while not stop.is_set():
                call_id, rung = uuid.uuid4(), AS_OF - dt.timedelta(seconds=5)
                params = {"new": (call_id, uuid.uuid4(), uuid.uuid4(), rung, rung),
                          "answer": (AS_OF - dt.timedelta(seconds=3), AS_OF - dt.timedelta(seconds=3), call_id),
                          "end": (AS_OF, AS_OF, call_id)}
                steps = [(kind, sql[kind],
                          (AS_OF - dt.timedelta(seconds=rnd.random()), rnd.choice(pool)) if kind == "progress" else params[kind])
                         for kind in LIFE]
                run_paced(c, steps, pace, stop, None if warm else lat, prepare=True)
                warm = False
    except psycopg.Error as e:
        errors.append(repr(e))


def table_stats(a: psycopg.Connection) -> tuple[int, int]:
    a.execute("SELECT pg_stat_clear_snapshot()")
    return a.execute("SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relid = %s::regclass",
                     (T,)).fetchone()


def fpi_bytes(a: psycopg.Connection, lsn0: str, lsn1: str) -> int | None:
    try:
        t0 = time.perf_counter()
        while not a.execute("SELECT pg_current_wal_flush_lsn() >= %s::pg_lsn", (lsn1,)).fetchone()[0]:
            if time.perf_counter() - t0 > 10:
                return None
            time.sleep(0.05)
        return int(a.execute("SELECT coalesce(sum(fpi_size), 0) FROM pg_get_wal_stats(%s, %s)", (lsn0, lsn1)).fetchone()[0])
    except psycopg.Error:
        return None


def write_run(run: Run, shape: str, ddl: dict, rnd: int) -> dict:
    a, args = run.admin, run.args
    reset(run, shape, ddl, args.pw_answered, args.pw_ringing)
    pool = [r[0] for r in a.execute(f"SELECT call_id FROM {T} WHERE status = 'Answered' AND started_at > %s",
                                    (AS_OF - RECENT,)).fetchall()]
    lat: dict[str, list[float]] = {k: [] for k in set(LIFE)}
    stop, errors = threading.Event(), []
    threads = [threading.Thread(target=client, args=(run, pool, stop, lat, errors, rnd * 100 + i))
               for i in range(args.pw_clients)]
    upd0, hot0 = table_stats(a)
    lsn0 = a.execute("SELECT pg_current_wal_insert_lsn()").fetchone()[0]
    for t in threads:
        t.start()
    time.sleep(args.pw_seconds)
    stop.set()
    for t in threads:
        t.join()  # the clients' sessions end: their table statistics are flushed
    lsn1 = a.execute("SELECT pg_current_wal_insert_lsn()").fetchone()[0]
    if errors:
        sys.exit(f"bench: product-writes client failed: {errors[0]}")
    wal = a.execute("SELECT %s::pg_lsn - %s::pg_lsn", (lsn1, lsn0)).fetchone()[0]
    fpi = fpi_bytes(a, lsn0, lsn1)
    t0 = time.perf_counter()  # an ended backend flushes its table statistics on its way out
    while a.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (APP,)).fetchone()[0]:
        if time.perf_counter() - t0 > 10:
            sys.exit("bench: product-writes clients did not exit")
        time.sleep(0.05)
    upd1, hot1 = table_stats(a)
    writes = [x for v in lat.values() for x in v]
    n = len(writes)
    r = {"shape": shape, "round": rnd, "statements": n, "progress": len(lat["progress"]),
         "updates": upd1 - upd0, "hot": hot1 - hot0, "wal_per": float(wal) / n,
         "nofpi_per": None if fpi is None else float(wal - fpi) / n,
         "p50": quantile(writes, 0.50), "p95": quantile(writes, 0.95), "p99": quantile(writes, 0.99),
         "p99_ci": quantile_interval(writes, 0.99), "progress_p99": quantile(lat["progress"], 0.99)}
    log(f"product-writes {shape} round {rnd}: {n:,} statements, {r['hot']:,} HOT of {r['updates']:,} updates"
        f" ({r['progress']:,} progress), {r['wal_per']:,.0f} WAL B/statement"
        f" ({r['nofpi_per'] or float('nan'):,.0f} without FPIs), p99 {r['p99']:.2f} ms")
    return r


def explain(c: psycopg.Connection, sql: str, params: dict) -> tuple[float, float]:
    """(shared buffers, execution ms) of one run of the claim, rolled back."""
    cur = psycopg.ClientCursor(c)
    with c.transaction(force_rollback=True):
        plan = cur.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql, params).fetchone()[0][0]
    top = plan["Plan"]
    return float(top["Shared Hit Blocks"] + top["Shared Read Blocks"]), float(plan["Execution Time"])


def claim_costs(run: Run, shape: str, ddl: dict, label: str, answered: int, ringing: int, backlog: int) -> dict:
    """Both phases' claims of one batch, each median of a few runs: buffers and ms."""
    base = CLAIM_INDEXES[shape]
    reset(run, base, ddl, answered, ringing, backlog)
    out = {"shape": shape, "label": label, "buffers": 0.0, "ms": 0.0}
    with run.connect() as c:
        # As the claim routines run: no sort of a lane; an incremental sort within one started_at.
        c.execute("SET enable_sort = off")
        c.execute("SET enable_incremental_sort = on")
        c.execute("SET jit = off")
        for status, where in CLAIMS[shape].items():
            sql = f"SELECT s.call_id FROM {T} AS s WHERE {where} LIMIT %(batch)s FOR NO KEY UPDATE SKIP LOCKED"
            p = {"cutoff": by_status(run.phases, status).cutoff, "batch": run.args.batches[0]}
            explain(c, sql, p)  # warm-up: plan and buffers
            runs = [explain(c, sql, p) for _ in range(run.args.pw_claim_runs)]
            out["buffers"] += statistics.median(b for b, _ in runs)
            out["ms"] += statistics.median(ms for _, ms in runs)
    log(f"product-writes claim {shape}, {label}: {out['buffers']:.0f} buffers, {out['ms']:.3f} ms (both phases)")
    return out


def run_product_writes(run: Run) -> dict:
    args = run.args
    setup(run)
    ddl = shape_indexes(run)
    runs = []
    for rnd in range(args.pw_rounds):
        order = SHAPES[rnd % len(SHAPES):] + SHAPES[:rnd % len(SHAPES)]  # each shape first once
        for shape in order:
            alias = same_as(ddl, shape)
            if alias is None:
                runs.append(write_run(run, shape, ddl, rnd))
        for shape in SHAPES:
            alias = same_as(ddl, shape)
            if alias is not None:  # the same table and indexes: that shape's runs of this round
                runs += [{**r, "shape": shape, "same_as": alias} for r in runs if r["shape"] == alias and r["round"] == rnd]
    claims = []
    for shape in CLAIMS:
        for label, answered, ringing, backlog in (
                ("idle, 100 live", 50, 50, 0),
                (f"idle, {args.pw_idle_live:,} live", args.pw_idle_live // 2, args.pw_idle_live // 2, 0),
                (f"first batch of a {args.backlog:,} backlog", args.pw_answered, args.pw_ringing, args.backlog)):
            claims.append(claim_costs(run, shape, ddl, label, answered, ringing, backlog))
    run.admin.execute("DROP SCHEMA bench_pw CASCADE")
    return {"runs": runs, "claims": claims}


def ratios(runs: list[dict], shape: str, key: str) -> list[float]:
    """shape / none per round."""
    base = {r["round"]: r[key] for r in runs if r["shape"] == "none"}
    return [r[key] / base[r["round"]] for r in runs if r["shape"] == shape and r[key] and base.get(r["round"])]


def summary(res: dict) -> dict[str, dict]:
    out = {}
    for shape in SHAPES:
        rs = [r for r in res["runs"] if r["shape"] == shape]
        if not rs:
            continue
        s = {k: statistics.median(r[k] for r in rs) for k in ("wal_per", "p50", "p95", "p99")}
        s["nofpi_per"] = statistics.median(r["nofpi_per"] for r in rs) if all(r["nofpi_per"] for r in rs) else None
        s["hot"] = sum(r["hot"] for r in rs) / max(sum(r["updates"] for r in rs), 1)
        s["hot_progress"] = sum(r["hot"] for r in rs) / max(sum(r["progress"] for r in rs), 1)
        s["statements"] = sum(r["statements"] for r in rs)
        s["runs"] = len(rs)
        for key in ("wal_per", "nofpi_per", "p99", "p95"):
            s[f"{key}_x"] = ratios(res["runs"], shape, key)
        s["p99_spread"] = (min(r["p99"] for r in rs), max(r["p99"] for r in rs))
        s["same_as"] = rs[0].get("same_as")
        out[shape] = s
    return out


def measured(res: dict) -> tuple[dict, list]:
    s = summary(res)
    values, figures = {}, []
    dep = s.get("deployed")
    # Without full-page images where pg_walinspect can tell them: a 10 s run right after a
    # CHECKPOINT pays an image for nearly every page it touches first, which a server spreads
    # over a checkpoint interval; with them, the same shape moved 0.55x-1.12x between rounds.
    key = "nofpi_per" if dep and dep["nofpi_per_x"] else "wal_per"
    if dep and dep[f"{key}_x"]:
        values["writes_wal"] = (statistics.median(dep[f"{key}_x"]),
                                "median of " + ", ".join(f"{x:.2f}" for x in dep[f"{key}_x"])
                                + f"; {dep[key]:,.0f} / {s['none'][key]:,.0f} B"
                                + (" without full-page images" if key == "nofpi_per" else "")
                                + (f"; the deploy added no index: the runs of '{dep['same_as']}'" if dep["same_as"] else ""))
        values["writes_p99"] = (statistics.median(dep["p99_x"]),
                                "median of " + ", ".join(f"{x:.2f}" for x in dep["p99_x"])
                                + (f"; the runs of '{dep['same_as']}'" if dep["same_as"] else ""))
    for shape in ("ix_call_due", "v1.2.0", "per-status"):
        if s.get(shape) and s[shape][f"{key}_x"]:
            figures.append((f"product WAL per write with the {shape} shape / without the reaper's index"
                            + (", without full-page images" if key == "nofpi_per" else ""),
                            f"{statistics.median(s[shape][f'{key}_x']):.2f}x"))
            figures.append((f"product p99 with the {shape} shape / without the reaper's index",
                            f"{statistics.median(s[shape]['p99_x']):.2f}x"))
    return values, figures
