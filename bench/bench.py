"""Throughput and idle-cost benchmark of messenger.reap_call_timeouts.

Runs against an already deployed database (bench/run creates a throwaway cluster and deploys
it; connection from the libpq PG* variables or --dsn). Everything is measured side by side in
one run because the machine is shared and noisy: only ratios are meant to be compared.

  * drain: a backlog of overdue calls (half Ringing past ring_timeout, half Answered past
    stale_timeout) is closed by
      - the reaper, one committed cycle per call, at each batch size;
      - an app-side peer: the same rules the way the design document's .NET worker would do
        them from a client (advisory lock, claim FOR NO KEY UPDATE SKIP LOCKED, one UPDATE per
        call and one INSERT per outbox row sent as a pipelined batch like EF Core's
        SaveChanges, COMMIT), at the same batch sizes;
      - the bare bound: one set-based UPDATE ... RETURNING + outbox INSERT over the whole
        backlog, no batching, no locks.
    Each drain also reports what it cost per closed call in counted units the machine's noise
    cannot move: WAL bytes, server-log bytes, shared buffers, MultiXacts; the goals' ratios are
    the median of ROUNDS rounds.
  * idle: cycles with nothing overdue, timed server-side (the cycle's own duration_ms), at
    several counts of active calls that are not yet overdue and at several history sizes.
  * product: client connections running live calls' statements at a fixed rate, alone and
    during a drain; latency percentiles and waits on the reaper's locks (sampled).
  * after-drain: idle-cycle buffers at the polling interval after a drain, autovacuum on.

Between drains the backlog is reset in place (delete the bench's recent calls, re-insert them,
VACUUM with INDEX_CLEANUP ON) rather than restored from a template: the history is never
touched, so a reset costs the same at 1M and 10M, and VACUUM leaves no dead index entries behind
to slow the next contestant down.
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import os
import pathlib
import platform
import re
import statistics
import subprocess
import sys
import threading
import time
import uuid

import psycopg

# The names shared with the tests (job, roles, the SQL expression of the lock key).
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests" / "python"))
from reaper_facts import JOB_NAME, LOCK_KEY_SQL

# The bench lives in its own far-future window so no clock-driven job ever finds its rows
# overdue; every cycle gets this as_of.
AS_OF = dt.datetime(2099, 6, 1, 12, 0, tzinfo=dt.UTC)
HISTORY_SPAN_DAYS = 365
RECENT = dt.timedelta(days=3)  # history ends here; backlog and live calls start after it
RING_TIMEOUT = dt.timedelta(seconds=45)
STALE_TIMEOUT = dt.timedelta(hours=2)
REPO = pathlib.Path(__file__).resolve().parent.parent

HISTORY_SQL = """
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, end_reason,
        started_at, answered_at, ended_at, updated_at, duration_seconds)
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(),
       CASE WHEN t.i %% 3 = 0 THEN 'Video' ELSE 'Audio' END,
       k.status, k.end_reason, t.started_at,
       CASE WHEN k.answered THEN t.started_at + interval '5 seconds' END,
       t.started_at + interval '65 seconds', t.started_at + interval '65 seconds',
       CASE WHEN k.status = 'Ended' THEN 60 END
  FROM (SELECT g.i, %(end)s::timestamptz - random() * %(span)s::interval AS started_at
          FROM generate_series(1, %(n)s) AS g (i)) AS t (i, started_at)
  JOIN (VALUES (0, 'Ended', 'Hangup', true), (1, 'Ended', 'Hangup', true), (2, 'Ended', 'Hangup', true),
               (3, 'Ended', 'Hangup', true), (4, 'Ended', 'Hangup', true), (5, 'Ended', 'Hangup', true),
               (6, 'Ended', 'Hangup', true), (7, 'Missed', 'Timeout', false),
               (8, 'Declined', 'Declined', false), (9, 'Failed', 'Error', true))
       AS k (m, status, end_reason, answered) ON k.m = t.i %% 10
"""

# Overdue Ringing calls: started between 6 h and 46 s before as_of.
RINGING_DUE_SQL = """
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, updated_at)
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing', t.s, t.s
  FROM (SELECT %(as_of)s::timestamptz - interval '46 seconds' - random() * interval '6 hours'
          FROM generate_series(1, %(n)s)) AS t (s)
"""

# Stale Answered calls: last progress between 1 day + 2 h and 2 h + 1 s before as_of.
ANSWERED_STALE_SQL = """
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Video', 'Answered',
       t.u - interval '10 minutes', t.u - interval '9 minutes', t.u
  FROM (SELECT %(as_of)s::timestamptz - interval '2 hours 1 second' - random() * interval '1 day'
          FROM generate_series(1, %(n)s)) AS t (u)
"""

# Live calls nobody may touch: Ringing for < 40 s, Answered with progress in the last 110 min.
LIVE_SQL = """
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', r.status,
       r.s, CASE WHEN r.status = 'Answered' THEN r.s + interval '5 seconds' END, r.u
  FROM (SELECT CASE WHEN g.i %% 2 = 0 THEN 'Ringing' ELSE 'Answered' END, random()
          FROM generate_series(1, %(n)s) AS g (i)) AS p (status, x)
 CROSS JOIN LATERAL (SELECT p.status,
                            CASE WHEN p.status = 'Ringing' THEN %(as_of)s::timestamptz - p.x * interval '40 seconds'
                                 ELSE %(as_of)s::timestamptz - p.x * interval '110 minutes' - interval '5 minutes' END AS s,
                            CASE WHEN p.status = 'Ringing' THEN %(as_of)s::timestamptz - p.x * interval '40 seconds'
                                 ELSE %(as_of)s::timestamptz - p.x * interval '110 minutes' END AS u) AS r
"""

BOUND_SQL = """
WITH closed AS (
    UPDATE messenger.call_sessions AS c
       SET status     = CASE c.status WHEN 'Ringing' THEN 'Missed' ELSE 'Failed' END,
           end_reason = CASE c.status WHEN 'Ringing' THEN 'Timeout' ELSE 'Error' END,
           ended_at = %(as_of)s, updated_at = %(as_of)s, duration_seconds = NULL
     WHERE (c.status = 'Ringing' AND messenger.call_due_key(c.status, c.started_at, c.updated_at) <= %(ring_cutoff)s)
        OR (c.status = 'Answered' AND messenger.call_due_key(c.status, c.started_at, c.updated_at) <= %(stale_cutoff)s)
    RETURNING c.call_id, c.caller_user_id, c.callee_user_id, c.media_type, c.status
)
INSERT INTO messenger.realtime_outbox
       (kind, target_kind, target_id, reference_id, payload, correlation_id, created_at)
SELECT CASE x.status WHEN 'Missed' THEN 'CallMissed' ELSE 'CallEnded' END, 'User', 'user:' || r.u,
       x.call_id, jsonb_build_object('callId', x.call_id, 'status', x.status, 'mediaType', x.media_type),
       %(run_id)s, %(as_of)s
  FROM closed AS x
 CROSS JOIN LATERAL (VALUES (1, x.caller_user_id), (2, x.callee_user_id)) AS r (n, u)
 WHERE r.n = 1 OR x.status = 'Failed'
"""

# The bound cut into committed batches: one statement per cycle claiming both phases with SKIP
# LOCKED, closing and pushing them. No ledger, counters, logs or poison handling: the gap
# between it and the bound is the price of batching and committing; the gap between the reaper
# and it is the reaper's own bookkeeping.
BATCHED_BOUND_SQL = """
WITH ringing AS (
    SELECT s.call_id, s.started_at FROM messenger.call_sessions AS s
     WHERE s.status = 'Ringing' AND messenger.call_due_key(s.status, s.started_at, s.updated_at) <= %(ring_cutoff)s
     ORDER BY messenger.call_due_key(s.status, s.started_at, s.updated_at), s.call_id LIMIT %(batch)s FOR NO KEY UPDATE SKIP LOCKED
), stale AS (
    SELECT s.call_id, s.started_at FROM messenger.call_sessions AS s
     WHERE s.status = 'Answered' AND messenger.call_due_key(s.status, s.started_at, s.updated_at) <= %(stale_cutoff)s
     ORDER BY messenger.call_due_key(s.status, s.started_at, s.updated_at), s.call_id LIMIT %(batch)s FOR NO KEY UPDATE SKIP LOCKED
), claimed AS (
    SELECT call_id, started_at FROM ringing UNION ALL SELECT call_id, started_at FROM stale
), closed AS (
    UPDATE messenger.call_sessions AS c
       SET status     = CASE c.status WHEN 'Ringing' THEN 'Missed' ELSE 'Failed' END,
           end_reason = CASE c.status WHEN 'Ringing' THEN 'Timeout' ELSE 'Error' END,
           ended_at = %(as_of)s, updated_at = %(as_of)s, duration_seconds = NULL
      FROM claimed AS k
     WHERE c.call_id = k.call_id AND c.started_at = k.started_at AND c.status IN ('Ringing', 'Answered')
    RETURNING c.call_id, c.caller_user_id, c.callee_user_id, c.media_type, c.status
), pushed AS (
    INSERT INTO messenger.realtime_outbox
           (kind, target_kind, target_id, reference_id, payload, correlation_id, created_at)
    SELECT CASE x.status WHEN 'Missed' THEN 'CallMissed' ELSE 'CallEnded' END, 'User', 'user:' || r.u,
           x.call_id, jsonb_build_object('callId', x.call_id, 'status', x.status, 'mediaType', x.media_type),
           %(run_id)s, %(as_of)s
      FROM closed AS x
     CROSS JOIN LATERAL (VALUES (1, x.caller_user_id), (2, x.callee_user_id)) AS r (n, u)
     WHERE r.n = 1 OR x.status = 'Failed'
)
SELECT count(*) FROM closed
"""

# The peer's statements, as an ORM-based worker issues them.
PEER_CLAIM = {
    "ring_timeout": """
        SELECT call_id, caller_user_id, callee_user_id, media_type, started_at
          FROM messenger.call_sessions
         WHERE status = 'Ringing' AND messenger.call_due_key(status, started_at, updated_at) <= %s
         ORDER BY messenger.call_due_key(status, started_at, updated_at), call_id
         LIMIT %s
           FOR NO KEY UPDATE SKIP LOCKED""",
    "stale_answered": """
        SELECT call_id, caller_user_id, callee_user_id, media_type, started_at
          FROM messenger.call_sessions
         WHERE status = 'Answered' AND messenger.call_due_key(status, started_at, updated_at) <= %s
         ORDER BY messenger.call_due_key(status, started_at, updated_at), call_id
         LIMIT %s
           FOR NO KEY UPDATE SKIP LOCKED""",
}
# By the entity's key, as an ORM does: call_id, or (call_id, started_at) once partitioned.
PEER_UPDATE = """
    UPDATE messenger.call_sessions
       SET status = %s, end_reason = %s, ended_at = %s, updated_at = %s, duration_seconds = NULL
     WHERE call_id = %s AND status = %s
    RETURNING call_id"""
PEER_UPDATE_PARTITIONED = """
    UPDATE messenger.call_sessions
       SET status = %s, end_reason = %s, ended_at = %s, updated_at = %s, duration_seconds = NULL
     WHERE call_id = %s AND started_at = %s AND status = %s
    RETURNING call_id"""
PEER_INSERT = """
    INSERT INTO messenger.realtime_outbox
           (kind, target_kind, target_id, reference_id, payload, correlation_id, created_at)
    VALUES (%s, 'User', %s, %s, %s::jsonb, %s, %s)"""
PEER_RULES = {
    # phase: (cutoff, from, to, end_reason, kind, both parties)
    "ring_timeout": (AS_OF - RING_TIMEOUT, "Ringing", "Missed", "Timeout", "CallMissed", False),
    "stale_answered": (AS_OF - STALE_TIMEOUT, "Answered", "Failed", "Error", "CallEnded", True),
}


# The product's statements (bench part "product"): a client's own live calls, by primary key.
PRODUCT_APP = "bench-product"
PRODUCT_NEW = """
    INSERT INTO messenger.call_sessions
           (call_id, caller_user_id, callee_user_id, media_type, status, started_at, updated_at)
    VALUES (%s, %s, %s, 'Audio', 'Ringing', %s, %s)"""
PRODUCT_ANSWER = """
    UPDATE messenger.call_sessions SET status = 'Answered', answered_at = %s, updated_at = %s
     WHERE call_id = %s AND status = 'Ringing'"""
PRODUCT_HEARTBEAT = """
    UPDATE messenger.call_sessions SET updated_at = %s WHERE call_id = %s AND status = 'Answered'"""
PRODUCT_END = """
    UPDATE messenger.call_sessions
       SET status = 'Ended', end_reason = 'Hangup', ended_at = %s, updated_at = %s, duration_seconds = 3
     WHERE call_id = %s AND status = 'Answered'"""
# A caller cancels one of the oldest overdue Ringing calls: the rows the reaper claims next.
PRODUCT_LATE_HANGUP = """
    UPDATE messenger.call_sessions SET status = 'Missed', end_reason = 'Cancelled', ended_at = %(t)s, updated_at = %(t)s
     WHERE status = 'Ringing'
       AND call_id = (SELECT s.call_id FROM messenger.call_sessions AS s
                       WHERE s.status = 'Ringing' AND s.started_at <= %(cutoff)s AND s.started_at > %(recent)s
                       ORDER BY s.started_at, s.call_id OFFSET floor(random() * 400)::integer LIMIT 1)"""


UUID_MAX = uuid.UUID("ffffffff-ffff-ffff-ffff-ffffffffffff")


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.admin = psycopg.connect(args.dsn, autocommit=True)
        self.history = 0
        self.results: dict[str, dict] = {}
        self.runs: dict[str, list[dict]] = {}
        self.idle: list[dict] = []
        self.seeding_s = 0.0
        self.server_log = self.find_server_log()
        self.product: dict[str, dict] = {}
        self.after_drain: list[dict] = []
        self.after_drain_pre: float | None = None

    # ---- data -----------------------------------------------------------------------------
    def prepare(self) -> None:
        a = self.admin
        if a.execute("SELECT to_regprocedure('messenger.reap_call_timeouts(integer,interval,interval,timestamptz)')").fetchone()[0] is None:
            sys.exit("bench: messenger.reap_call_timeouts is not deployed in this database")
        # The scheduled job must not compete for the single-runner lock while we measure.
        if a.execute("SELECT to_regclass('cron.job')").fetchone()[0] is not None:
            a.execute("SELECT cron.unschedule(jobid) FROM cron.job WHERE jobname = %s", [JOB_NAME])
        if a.execute("SELECT count(*) FROM messenger.call_sessions").fetchone()[0]:
            sys.exit("bench: messenger.call_sessions is not empty; run the bench on a throwaway database")
        if self.args.partitioned:
            log("handing messenger.call_sessions to pg_partman (sql/partition_call_sessions.sql)")
            # A psql script (it reads psql variables); the table is empty, so there is no
            # history for step 2 to move.
            subprocess.run(["psql", "-X", "-q", "-1", "-v", "ON_ERROR_STOP=1", "-d", self.args.dsn,
                            "-f", str(REPO / "sql" / "partition_call_sessions.sql")], check=True)
            # pg_partman keeps months around now(); the bench lives in 2098-2099, so it creates
            # the months it seeds. pg_partman cuts months in the session's TimeZone.
            with a.transaction():
                a.execute("SET LOCAL TimeZone = 'UTC'")
                a.execute(
                    """SELECT partman.create_partition_time('messenger.call_sessions', ARRAY(
                           SELECT generate_series(date_trunc('month', %s::timestamptz), %s::timestamptz, interval '1 month')))""",
                    (AS_OF - dt.timedelta(days=HISTORY_SPAN_DAYS) - RECENT - dt.timedelta(days=31),
                     AS_OF + dt.timedelta(days=31)),
                )
        if a.execute("SELECT count(*) FROM pg_extension WHERE extname = 'pg_stat_statements'").fetchone()[0] == 0:
            try:
                a.execute("CREATE EXTENSION pg_stat_statements")
            except psycopg.Error:
                pass  # not preloaded: the profile is simply not printed

    def grow_history(self, target: int) -> None:
        n = target - self.history
        if n <= 0:
            return
        t0 = time.perf_counter()
        step = 1_000_000
        while n > 0:
            chunk = min(step, n)
            self.admin.execute(HISTORY_SQL, {"n": chunk, "end": AS_OF - RECENT,
                                             "span": dt.timedelta(days=HISTORY_SPAN_DAYS)})
            n -= chunk
            self.history += chunk
            log(f"history: {self.history:,} calls")
        self.admin.execute("VACUUM (ANALYZE, INDEX_CLEANUP ON) messenger.call_sessions")
        self.seeding_s += time.perf_counter() - t0

    def reset_recent(self, ringing: int, answered: int, live: int) -> None:
        """Replace the calls after the history (backlog + live ones) and empty the outbox."""
        t0 = time.perf_counter()
        a = self.admin
        a.execute("DELETE FROM messenger.call_sessions WHERE started_at > %s", (AS_OF - RECENT,))
        a.execute("TRUNCATE messenger.realtime_outbox, messenger.call_reaper_runs, messenger.call_reaper_quarantine")
        a.execute(RINGING_DUE_SQL, {"n": ringing, "as_of": AS_OF})
        a.execute(ANSWERED_STALE_SQL, {"n": answered, "as_of": AS_OF})
        a.execute(LIVE_SQL, {"n": live, "as_of": AS_OF})
        # INDEX_CLEANUP ON: on a big table, VACUUM skips index vacuuming when under 2 % of the heap
        # pages hold dead rows (PostgreSQL 14+), which at 10M calls left the previous drain's
        # dead entries in the partial indexes for every following cycle to walk.
        a.execute("VACUUM (ANALYZE, INDEX_CLEANUP ON) messenger.call_sessions, messenger.realtime_outbox")
        a.execute("CHECKPOINT")
        self.seeding_s += time.perf_counter() - t0

    def check_drained(self, name: str, backlog: int) -> None:
        left = self.admin.execute(
            "SELECT count(*) FROM messenger.call_sessions WHERE started_at > %s"
            " AND ((status = 'Ringing' AND messenger.call_due_key(status, started_at, updated_at) <= %s)"
            " OR (status = 'Answered' AND messenger.call_due_key(status, started_at, updated_at) <= %s))",
            (AS_OF - RECENT, AS_OF - RING_TIMEOUT, AS_OF - STALE_TIMEOUT)).fetchone()[0]
        rows = self.admin.execute("SELECT count(*) FROM messenger.realtime_outbox").fetchone()[0]
        live = self.admin.execute(
            "SELECT count(*) FROM messenger.call_sessions WHERE started_at > %s AND status IN ('Ringing', 'Answered')",
            (AS_OF - RECENT,)).fetchone()[0]
        ringing = backlog // 2
        want_rows = ringing + 2 * (backlog - ringing)
        if left or rows != want_rows or live != self.args.live:
            sys.exit(f"bench: {name} left {left} overdue calls, wrote {rows} outbox rows (want {want_rows}),"
                     f" {live} live calls (want {self.args.live})")

    # ---- counted costs -----------------------------------------------------------------------
    def find_server_log(self) -> pathlib.Path | None:
        """The file the server writes its log to: bench/in-cluster passes pg_virtualenv's
        (the cluster logs to stderr, redirected by pg_ctlcluster); with logging_collector on,
        pg_current_logfile() names it."""
        env = os.environ.get("BENCH_SERVER_LOG")
        if env and pathlib.Path(env).is_file():
            return pathlib.Path(env)
        row = self.admin.execute("SELECT pg_current_logfile(), current_setting('data_directory')").fetchone()
        if row[0]:
            path = pathlib.Path(row[1]) / row[0] if not row[0].startswith("/") else pathlib.Path(row[0])
            if path.is_file():
                return path
        return None

    def log_size(self) -> int | None:
        return self.server_log.stat().st_size if self.server_log else None

    def counted(self, fn) -> dict:
        """Runs one contestant and adds what it cost in units the machine's noise cannot move:
        WAL bytes (insert LSN delta), server-log bytes (the log file's growth) and shared buffers
        touched (pg_stat_statements, top-level statements: a function's figure includes its
        nested statements)."""
        a = self.admin
        have_pgss = self.statements_reset()
        log0 = self.log_size()
        lsn0 = a.execute("SELECT pg_current_wal_insert_lsn()").fetchone()[0]
        # MultiXacts created: a row locked in one (sub)transaction and updated in another gets
        # one. The age of datminmxid grows by one per MultiXact (autovacuum is off meanwhile).
        mx = "SELECT mxid_age(datminmxid) FROM pg_database WHERE datname = current_database()"
        mx0 = a.execute(mx).fetchone()[0]
        r = fn()
        r["wal"] = a.execute("SELECT pg_current_wal_insert_lsn() - %s::pg_lsn", (lsn0,)).fetchone()[0]
        r["multixacts"] = a.execute(mx).fetchone()[0] - mx0
        log1 = self.log_size()
        r["log"] = None if log0 is None else log1 - log0
        r["buffers"] = r["exec_ms"] = None
        if have_pgss:
            r["buffers"], r["exec_ms"] = a.execute(
                "SELECT sum(shared_blks_hit + shared_blks_read), sum(total_exec_time) FROM pg_stat_statements"
                " WHERE toplevel AND query NOT LIKE '%%pg_current_wal_insert_lsn%%'"
                "   AND query NOT LIKE '%%pg_stat_statements%%'").fetchone()
        return r

    def per_call(self, r: dict, key: str) -> float:
        v = r.get(key)
        return float("nan") if v is None else float(v) / self.args.backlog

    def explain_apply(self, batch: int) -> None:
        """EXPLAIN (ANALYZE, BUFFERS) of _reap_apply's statement with its generic plan (what the
        function runs under plan_cache_mode = force_generic_plan) on one claimed batch of each
        phase, rolled back. The statement text is read from the deploy script, so it stays the
        deployed one."""
        src = (REPO / "deploy" / "functions" / "_reap_apply.sql").read_text()
        stmt = src.split("\nRETURN QUERY\n", 1)[1].split("END\n$$", 1)[0].strip().rstrip(";")
        for i, name in enumerate(("p_phase", "p_call_ids", "p_started_at", "p_due_at", "p_run_id", "p_as_of"), 1):
            stmt = re.sub(rf"\b{name}\b", f"${i}", stmt)
        claims = {
            "ring_timeout": (PEER_CLAIM["ring_timeout"], AS_OF - RING_TIMEOUT, RING_TIMEOUT, "started_at"),
            "stale_answered": (PEER_CLAIM["stale_answered"], AS_OF - STALE_TIMEOUT, STALE_TIMEOUT, "updated_at"),
        }
        # Parameters bound client-side: EXPLAIN EXECUTE cannot infer the types of bind parameters.
        with psycopg.connect(self.args.dsn, cursor_factory=psycopg.ClientCursor) as c:
            c.execute("SET plan_cache_mode = force_generic_plan")
            c.execute("PREPARE bench_apply (text, uuid[], timestamptz[], timestamptz[], uuid, timestamptz) AS " + stmt)
            c.commit()  # the SET must outlive the rollbacks below
            phase_src = (REPO / "deploy" / "functions" / "_reap_phase.sql").read_text()
            for phase, (claim, cutoff, timeout, key) in claims.items():
                # A healthy lane's claim-and-count statement as deployed, with its generic plan
                # too: the whole due range of the phase as one lane, nothing quarantined.
                head, rest = phase_src.split("        WITH claimed AS MATERIALIZED (", 1)[1].split(
                    "          INTO v_lane_ids,", 1)
                cstmt = "WITH claimed AS MATERIALIZED (" + head + rest.split("\n", 1)[1].split(";", 1)[0]
                names = ("v_status", "v_lane_lo_id", "v_lane_lo", "v_lane_hi", "v_limit", "v_quarantined", "c_uuid_max")
                for i, name in enumerate(names, 1):
                    cstmt = re.sub(rf"\b{name}\b", f"${i}", cstmt)
                c.execute(f"PREPARE bench_claim_{phase} (text, uuid, timestamptz, timestamptz, integer, boolean, uuid) AS "
                          + cstmt)
                status = "Ringing" if phase == "ring_timeout" else "Answered"
                c.execute("SET LOCAL enable_sort = off")  # _reap_phase's own settings
                c.execute("SET LOCAL jit = off")
                plan = c.execute(f"EXPLAIN (ANALYZE, BUFFERS) EXECUTE bench_claim_{phase}"
                                 " (%s::text, %s::uuid, '-infinity', %s::timestamptz, %s::integer, false, %s::uuid)",
                                 (status, UUID_MAX, cutoff, batch, UUID_MAX)).fetchall()
                c.execute("SET LOCAL enable_sort = on")  # _reap_apply's
                print(f"\nEXPLAIN (ANALYZE, BUFFERS) of _reap_phase's claim-and-count statement, generic plan, {phase}:")
                for (line,) in plan:
                    print("  " + line)
                claim_k = claim.replace("SELECT call_id,", f"SELECT {key} AS due_key, call_id,")
                rows = c.execute(claim_k, (cutoff, batch)).fetchall()
                ids = [r[1] for r in rows]
                started = [r[5] for r in rows]
                due = [r[0] + timeout for r in rows]
                plan = c.execute("EXPLAIN (ANALYZE, BUFFERS) EXECUTE bench_apply (%s::text, %s::uuid[], %s::timestamptz[], %s::timestamptz[], %s::uuid, %s::timestamptz)",
                                 (phase, ids, started, due, uuid.uuid4(), AS_OF)).fetchall()
                print(f"\nEXPLAIN (ANALYZE, BUFFERS) of _reap_apply's statement, generic plan, {phase}, {len(ids)} calls:")
                for (line,) in plan:
                    print("  " + line)
                c.rollback()

    # ---- contestants ----------------------------------------------------------------------
    def drain_reaper(self, batch: int) -> dict:
        cycles = 0
        server_ms = 0.0
        with psycopg.connect(self.args.dsn, autocommit=True) as c:
            if self.args.profile:
                c.execute("SET pg_stat_statements.track = 'all'")
            t0 = time.perf_counter()
            while True:
                missed, failed, ms, locked = c.execute(
                    "SELECT missed_count, failed_count, duration_ms, lock_acquired"
                    "  FROM messenger.reap_call_timeouts(%s, NULL, NULL, %s)", (batch, AS_OF)).fetchone()
                if not locked:
                    sys.exit("bench: the reaper lost its lock to someone else")
                if missed + failed == 0:
                    break
                cycles += 1
                server_ms += float(ms)
            wall = time.perf_counter() - t0
        return {"wall_s": wall, "cycles": cycles, "server_ms": server_ms}

    def drain_peer(self, batch: int) -> dict:
        cycles = 0
        with psycopg.connect(self.args.dsn) as c:
            c.execute("SELECT 1")
            c.commit()
            t0 = time.perf_counter()
            while True:
                closed = 0
                with c.transaction():
                    if not c.execute(f"SELECT pg_try_advisory_xact_lock({LOCK_KEY_SQL})").fetchone()[0]:
                        sys.exit("bench: the peer lost its lock to someone else")
                    run_id = c.execute("SELECT gen_random_uuid()").fetchone()[0]
                    for phase, (cutoff, src, dst, reason, kind, both) in PEER_RULES.items():
                        calls = c.execute(PEER_CLAIM[phase], (cutoff, batch)).fetchall()
                        if not calls:
                            continue
                        with c.cursor() as cur:
                            if self.args.partitioned:
                                cur.executemany(PEER_UPDATE_PARTITIONED,
                                                [(dst, reason, AS_OF, AS_OF, call[0], call[4], src) for call in calls],
                                                returning=True)
                            else:
                                cur.executemany(PEER_UPDATE, [(dst, reason, AS_OF, AS_OF, call[0], src) for call in calls],
                                                returning=True)
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
                                payload = psycopg.types.json.Jsonb({"callId": str(call_id), "status": dst, "mediaType": media})
                                for user in (caller, callee) if both else (caller,):
                                    outbox.append((kind, f"user:{user}", call_id, payload, run_id, AS_OF))
                            cur.executemany(PEER_INSERT, outbox)
                        closed += len(done)
                if closed == 0:
                    break
                cycles += 1
            wall = time.perf_counter() - t0
        return {"wall_s": wall, "cycles": cycles, "server_ms": None}

    def drain_batched_bound(self, batch: int) -> dict:
        cycles = 0
        with psycopg.connect(self.args.dsn, autocommit=True) as c:
            t0 = time.perf_counter()
            while True:
                n = c.execute(BATCHED_BOUND_SQL, {
                    "as_of": AS_OF, "ring_cutoff": AS_OF - RING_TIMEOUT, "stale_cutoff": AS_OF - STALE_TIMEOUT,
                    "batch": batch, "run_id": uuid.uuid4()}).fetchone()[0]
                if n == 0:
                    break
                cycles += 1
            wall = time.perf_counter() - t0
        return {"wall_s": wall, "cycles": cycles, "server_ms": None}

    def drain_bound(self) -> dict:
        with psycopg.connect(self.args.dsn) as c:
            c.execute("SELECT 1")
            c.commit()
            t0 = time.perf_counter()
            c.execute(BOUND_SQL, {"as_of": AS_OF, "ring_cutoff": AS_OF - RING_TIMEOUT,
                                  "stale_cutoff": AS_OF - STALE_TIMEOUT,
                                  "run_id": c.execute("SELECT gen_random_uuid()").fetchone()[0]})
            c.commit()
            wall = time.perf_counter() - t0
        return {"wall_s": wall, "cycles": 1, "server_ms": None}

    def idle_cycle(self, label: str, active: int) -> None:
        n = self.args.idle_cycles
        server, client = [], []
        buffers = None
        with psycopg.connect(self.args.dsn, autocommit=True) as c:
            for i in range(n + 20):
                if i == 20:
                    buffers = self.statements_reset()
                t0 = time.perf_counter()
                missed, failed, ms = c.execute(
                    "SELECT missed_count, failed_count, duration_ms"
                    "  FROM messenger.reap_call_timeouts(NULL, NULL, NULL, %s)", (AS_OF,)).fetchone()
                elapsed = (time.perf_counter() - t0) * 1000
                if missed or failed:
                    sys.exit(f"bench: idle cycle closed {missed + failed} calls")
                if i >= 20:  # warm-up: plan caches, buffers
                    server.append(float(ms))
                    client.append(elapsed)
        if buffers:
            # Shared buffers the cycle touches (nested statements included): unlike time, this
            # does not depend on what else the machine is doing.
            row = self.admin.execute(
                "SELECT sum(shared_blks_hit + shared_blks_read)::float8 / nullif(sum(calls), 0)"
                "  FROM pg_stat_statements WHERE toplevel AND query LIKE '%%FROM messenger.reap_call_timeouts(%%'").fetchone()
            buffers = row[0]
        self.idle.append({"label": label, "history": self.history, "active": active,
                          "server_ms": statistics.median(server), "client_ms": statistics.median(client),
                          "p90_ms": statistics.quantiles(server, n=10)[-1], "buffers": buffers})
        log(f"idle {label}: median {statistics.median(server):.3f} ms server-side")

    # ---- the product during a drain ---------------------------------------------------------
    def product_client(self, stop: threading.Event, rate: float, lat: dict, errors: list) -> None:
        """One client of the product at a fixed rate: a call's life (new call, answer, three
        heartbeats, end) on its own live calls, then one late hangup: a caller cancelling one of
        the oldest overdue Ringing calls, the race the reaper's SKIP LOCKED claim is built for and
        the only statement that can wait on a row the reaper holds."""
        interval = 1.0 / rate
        try:
            with psycopg.connect(self.args.dsn, autocommit=True, application_name=PRODUCT_APP) as c:
                t_next = time.perf_counter()
                while not stop.is_set():
                    call_id = uuid.uuid4()
                    rung, answered = AS_OF - dt.timedelta(seconds=5), AS_OF - dt.timedelta(seconds=3)
                    steps = [("new", PRODUCT_NEW, (call_id, uuid.uuid4(), uuid.uuid4(), rung, rung)),
                             ("answer", PRODUCT_ANSWER, (answered, answered, call_id))]
                    steps += [("heartbeat", PRODUCT_HEARTBEAT, (AS_OF, call_id))] * 3
                    steps += [("end", PRODUCT_END, (AS_OF, AS_OF, call_id)),
                              ("late_hangup", PRODUCT_LATE_HANGUP,
                               {"t": AS_OF, "cutoff": AS_OF - RING_TIMEOUT, "recent": AS_OF - RECENT})]
                    for kind, sql, params in steps:
                        if stop.is_set():
                            break
                        delay = t_next - time.perf_counter()
                        if delay > 0:
                            time.sleep(delay)
                        t_next += interval
                        t0 = time.perf_counter()
                        c.execute(sql, params)
                        lat[kind].append((time.perf_counter() - t0) * 1000)
        except psycopg.Error as e:  # reported by the main thread; a dead client must not go unnoticed
            errors.append(repr(e))

    def lock_sampler(self, stop: threading.Event, reaper: dict, waits: dict, other: dict) -> None:
        """Samples the product's backends every few ms: a statement waiting on a heavyweight lock
        whose blockers include the reaper's backend is recorded with how long it had been running
        by then (statement start to sample, so a slight over-estimate of the wait)."""
        with psycopg.connect(self.args.dsn, autocommit=True) as c:
            while not stop.is_set():
                for pid, started, waited_ms, blockers, wtype, event in c.execute(
                        "SELECT pid, query_start, extract(epoch FROM clock_timestamp() - query_start) * 1000,"
                        "       CASE WHEN wait_event_type = 'Lock' THEN pg_blocking_pids(pid) END, wait_event_type,"
                        "       wait_event"
                        "  FROM pg_stat_activity WHERE application_name = %s AND state = 'active'"
                        "   AND wait_event_type IS NOT NULL AND wait_event_type <> 'Client'",
                        (PRODUCT_APP,)).fetchall():
                    key = (pid, started)
                    if wtype == "Lock" and reaper.get("pid") in (blockers or []):
                        waits[key] = max(waits.get(key, 0.0), float(waited_ms))
                    else:
                        other[f"{wtype}:{event}"] = other.get(f"{wtype}:{event}", 0) + 1
                time.sleep(self.args.sample_ms / 1000)

    def product_run(self, label: str, drain: bool, pause_ms: float = 0.0) -> None:
        ringing = self.args.backlog // 2
        self.reset_recent(ringing, self.args.backlog - ringing, self.args.live)
        stop = threading.Event()
        lat: dict[str, list[float]] = {k: [] for k in ("new", "answer", "heartbeat", "end", "late_hangup")}
        errors: list[str] = []
        reaper: dict = {}
        waits: dict = {}
        other: dict = {}
        threads = [threading.Thread(target=self.product_client, args=(stop, self.args.product_rate, lat, errors))
                   for _ in range(self.args.product_clients)]
        threads.append(threading.Thread(target=self.lock_sampler, args=(stop, reaper, waits, other)))
        for t in threads:
            t.start()
        cycle_ms: list[float] = []
        try:
            time.sleep(2)  # the clients connect and prepare their statements before it counts
            for v in lat.values():
                v.clear()
            t0 = time.perf_counter()
            if drain:
                with psycopg.connect(self.args.dsn, autocommit=True) as c:
                    reaper["pid"] = c.info.backend_pid
                    while True:
                        t1 = time.perf_counter()
                        missed, failed = c.execute(
                            "SELECT missed_count, failed_count FROM messenger.reap_call_timeouts(%s, NULL, NULL, %s)",
                            (self.args.batches[0], AS_OF)).fetchone()
                        if missed + failed == 0:
                            break
                        cycle_ms.append((time.perf_counter() - t1) * 1000)
                        if pause_ms:
                            time.sleep(pause_ms / 1000)
            else:
                time.sleep(self.args.product_seconds)
            wall = time.perf_counter() - t0
        finally:
            stop.set()
            for t in threads:
                t.join()
        if errors:
            sys.exit(f"bench: product client failed: {errors[0]}")
        live = [x for k in ("new", "answer", "heartbeat", "end") for x in lat[k]]
        late = lat["late_hangup"]

        def q(xs: list[float], p: int) -> float:
            return statistics.quantiles(xs, n=100, method="inclusive")[p - 1] if len(xs) > 1 else float("nan")

        self.product[label] = {
            "wall_s": wall, "statements": len(live) + len(late), "live_p50": q(live, 50), "live_p99": q(live, 99),
            "late_n": len(late), "late_p50": q(late, 50), "late_p99": q(late, 99),
            "waits": len(waits), "wait_max_ms": max(waits.values(), default=0.0),
            "wait_total_ms": sum(waits.values()), "other_waits": dict(other),
            "cycles": len(cycle_ms), "cycle_p50_ms": statistics.median(cycle_ms) if cycle_ms else None,
            "cycle_max_ms": max(cycle_ms, default=None),
        }
        log(f"product {label}: {len(live) + len(late):,} statements in {wall:.1f} s, live p50"
            f" {q(live, 50):.2f} ms p99 {q(live, 99):.2f} ms; {len(waits)} waited on the reaper"
            f" (max {max(waits.values(), default=0.0):.1f} ms); other waits sampled: {other}")

    # ---- idle after a drain -----------------------------------------------------------------
    def idle_buffers(self, c: psycopg.Connection, cycles: int) -> tuple[float, float]:
        """Shared buffers per idle cycle (mean over cycles) and the last cycle's server ms, on a
        session that has already planned the cycle's statements (the first cycle of a session
        also reads the catalogs to plan them: about 1,600 buffers)."""
        self.statements_reset()
        for _ in range(cycles):
            ms = c.execute("SELECT duration_ms FROM messenger.reap_call_timeouts(NULL, NULL, NULL, %s)",
                           (AS_OF,)).fetchone()[0]
        row = self.admin.execute(
            "SELECT sum(shared_blks_hit + shared_blks_read)::float8 / nullif(sum(calls), 0)"
            "  FROM pg_stat_statements WHERE toplevel AND query LIKE '%%FROM messenger.reap_call_timeouts(%%'").fetchone()
        return row[0], float(ms)

    def after_drain_run(self, variant: str) -> None:
        """Idle cycles at the polling interval in real time after a drain, with autovacuum on
        (server defaults: naptime 1 min) and call_sessions' own settings as deployed, or reset
        to the server's defaults to see what the deploy's settings buy."""
        a = self.admin
        saved = a.execute("SELECT reloptions FROM pg_class WHERE oid = 'messenger.call_sessions'::regclass").fetchone()[0]
        if variant != "as deployed":
            a.execute("ALTER TABLE messenger.call_sessions RESET (autovacuum_vacuum_scale_factor, autovacuum_vacuum_threshold)")
        try:
            # An autovacuum ANALYZE running meanwhile would hold back the reset's VACUUM (see the
            # Makefile), leaving dead entries in the "before" figure.
            self.wait_autovacuum_idle()
            self.reset_recent(0, 0, 100)
            # Twice: a snapshot held for a moment elsewhere (pg_cron's launcher polls every
            # minute) sometimes keeps the first VACUUM from removing the deleted calls' entries,
            # which inflated the "before" figure (15 -> 33 buffers) in one run of three.
            self.admin.execute("VACUUM (INDEX_CLEANUP ON) messenger.call_sessions")
            c = psycopg.connect(self.args.dsn, autocommit=True)
            self.idle_buffers(c, 20)  # warm-up
            pre, _ = self.idle_buffers(c, 20)
            if self.after_drain_pre is None:
                self.after_drain_pre = pre
            ringing = self.args.backlog // 2
            self.reset_recent(ringing, self.args.backlog - ringing, 100)
            av0 = a.execute("SELECT autovacuum_count FROM pg_stat_user_tables"
                            " WHERE relid = 'messenger.call_sessions'::regclass").fetchone()[0]
            self.drain_reaper(self.args.batches[0])
            t_end = time.perf_counter()
            for i in range(self.args.after_drain_cycles + 1):
                delay = t_end + i * self.args.poll_interval - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                bufs, ms = self.idle_buffers(c, 1)
                dead, av = a.execute("SELECT n_dead_tup, autovacuum_count FROM pg_stat_user_tables"
                                     " WHERE relid = 'messenger.call_sessions'::regclass").fetchone()
                self.after_drain.append({"variant": variant, "cycle": i, "t_s": time.perf_counter() - t_end,
                                         "buffers": bufs, "ms": ms, "dead": dead, "autovacuums": av - av0, "pre": pre})
                log(f"after drain ({variant}) cycle {i}: {bufs:.0f} buffers, {ms:.3f} ms, {dead:,} dead rows,"
                    f" {av - av0} autovacuum(s) so far")
            c.close()
        finally:
            if variant != "as deployed" and saved:
                a.execute(f"ALTER TABLE messenger.call_sessions SET ({', '.join(saved)})")

    def wait_autovacuum_idle(self, limit_s: float = 120) -> None:
        t0 = time.perf_counter()
        while self.admin.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'").fetchone()[0]:
            if time.perf_counter() - t0 > limit_s:
                log(f"autovacuum still busy after {limit_s:.0f} s, going on")
                return
            time.sleep(0.5)

    def run_after_drain(self) -> None:
        a = self.admin
        # The rest of the bench runs without autovacuum (see the Makefile); this part is about
        # what autovacuum does, so it runs with the server's defaults. Turned on before the
        # pre-drain figure so its launcher keeps its own rhythm, as on a real server.
        a.execute("ALTER SYSTEM SET autovacuum = on")
        a.execute("SELECT pg_reload_conf()")
        try:
            variants = ["as deployed"] + (["server defaults"] if self.args.after_drain_baseline else [])
            for v in variants:
                self.after_drain_run(v)
        finally:
            a.execute("ALTER SYSTEM RESET autovacuum")
            a.execute("SELECT pg_reload_conf()")

    # ---- orchestration --------------------------------------------------------------------
    def run_drains(self) -> None:
        backlog = self.args.backlog
        ringing = backlog // 2
        b0 = self.args.batches[0]
        plan = []
        # The ratios at the first batch size are the goals': those three contestants run every
        # round; the peer (the slowest, ~30 s) and the other batch sizes only in the first
        # PEER_ROUNDS / one round, to keep make bench within minutes.
        for rnd in range(self.args.rounds):
            for b in self.args.batches:
                if b == b0 or rnd == 0:
                    plan.append((rnd, f"reaper@{b}", lambda b=b: self.drain_reaper(b)))
                if (b == b0 and rnd < self.args.peer_rounds) or (b != b0 and rnd == 0):
                    plan.append((rnd, f"peer@{b}", lambda b=b: self.drain_peer(b)))
            plan.append((rnd, f"batched-bound@{b0}", lambda: self.drain_batched_bound(b0)))
            plan.append((rnd, "bound", self.drain_bound))
        for rnd, name, fn in plan:
            if self.args.profile and name == f"reaper@{b0}" and name not in self.runs:
                self.reset_recent(ringing, backlog - ringing, self.args.live)
                self.explain_apply(b0)
            self.reset_recent(ringing, backlog - ringing, self.args.live)
            if self.args.profile and name == f"reaper@{b0}" and name not in self.runs:
                self.profile_reset()
            r = self.counted(fn)
            self.check_drained(name, backlog)
            if self.args.profile and name == f"reaper@{b0}" and name not in self.runs:
                self.profile_print(name)
            r["calls_s"] = backlog / r["wall_s"]
            r["round"] = rnd
            log(f"{name}: {backlog:,} calls in {r['wall_s']:.2f} s = {r['calls_s']:,.0f} calls/s, {r['cycles']} cycles,"
                f" {self.per_call(r, 'wal'):,.0f} WAL B/call, {self.per_call(r, 'log'):,.0f} log B/call,"
                f" {self.per_call(r, 'buffers'):,.1f} buffers/call")
            self.runs.setdefault(name, []).append(r)
        # With several rounds, each contestant's median run (rounds interleave the contestants,
        # so a noisy minute hits all of them alike).
        for name, runs in self.runs.items():
            runs.sort(key=lambda r: r["wall_s"])
            mid = dict(runs[(len(runs) - 1) // 2])
            mid["wall_s"] = statistics.median(r["wall_s"] for r in runs)
            mid["calls_s"] = backlog / mid["wall_s"]
            self.results[name] = mid

    def statements_reset(self) -> bool:
        try:
            self.admin.execute("SELECT pg_stat_statements_reset()")
            return True
        except psycopg.Error:
            return False

    def profile_reset(self) -> None:
        try:
            self.admin.execute("SELECT pg_stat_statements_reset()")
            self._profiling = True
        except psycopg.Error:
            self._profiling = False

    def profile_print(self, name: str) -> None:
        if not getattr(self, "_profiling", False):
            return
        rows = self.admin.execute(
            "SELECT round(total_exec_time::numeric, 1), calls, rows, shared_blks_hit + shared_blks_read,"
            "       left(regexp_replace(query, '\\s+', ' ', 'g'), 110)"
            "  FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
            " ORDER BY total_exec_time DESC LIMIT 12").fetchall()
        print(f"\nProfile of {name} (pg_stat_statements, track=all):")
        print(f"{'total ms':>10} {'calls':>7} {'rows':>8} {'buffers':>9}  query")
        for ms, calls, nrows, bufs, q in rows:
            print(f"{ms:>10} {calls:>7} {nrows:>8} {bufs:>9}  {q}")

    def run(self) -> None:
        t_start = time.perf_counter()
        parts = self.args.parts
        self.prepare()
        levels = sorted(set(self.args.idle_history) | {self.args.history})
        for level in levels:
            self.grow_history(level)
            if level in self.args.idle_history and "idle" in parts:
                self.reset_recent(0, 0, 100)
                self.idle_cycle(f"history {level:,}, 100 active", 100)
            if level == self.args.history:
                if "idle" in parts:
                    for active in self.args.idle_active:
                        self.reset_recent(0, 0, active)
                        self.idle_cycle(f"{active:,} active, history {level:,}", active)
                if "drain" in parts:
                    self.run_drains()
                if "product" in parts:
                    self.product_run("alone", drain=False)
                    self.product_run(f"during a {self.args.backlog:,}-call drain at batch {self.args.batches[0]}", drain=True)
                    if self.args.drain_pause_ms:
                        self.product_run(f"during a drain pausing {self.args.drain_pause_ms:g} ms between cycles",
                                         drain=True, pause_ms=self.args.drain_pause_ms)
                if "after-drain" in parts:
                    self.run_after_drain()
        self.total_s = time.perf_counter() - t_start
        self.report()

    def round_ratios(self, num: str, den: str) -> list[float]:
        """num/den per round, each from the two contestants' runs in that round (rounds
        interleave the contestants, so a noisy minute hits both); a contestant that ran in one
        round only is compared with every round of the other."""
        a = {r["round"]: r["calls_s"] for r in self.runs.get(num, [])}
        b = {r["round"]: r["calls_s"] for r in self.runs.get(den, [])}
        if not a or not b:
            return []
        if len(b) == 1:
            b = dict.fromkeys(a, next(iter(b.values())))
        if len(a) == 1:
            a = dict.fromkeys(b, next(iter(a.values())))
        return [a[k] / b[k] for k in sorted(a) if k in b]

    def report(self) -> None:
        a = self.args
        res = self.results
        b0 = a.batches[0]
        lines = []
        goals = []  # (text, shown value, met: True/False/None)

        def fmt(v, spec):
            return "n/a" if v is None or math.isnan(v) else format(v, spec)

        if res:
            bound = res["bound"]["calls_s"]
            lines.append(f"Backlog {a.backlog:,} overdue calls ({a.backlog // 2:,} Ringing, {a.backlog - a.backlog // 2:,} stale Answered), "
                         f"history {a.history:,}, {a.live:,} live calls, {'partitioned' if a.partitioned else 'plain'} call_sessions"
                         f", {a.rounds} round(s) at batch {b0} (median), peer@{b0} in {min(a.peer_rounds, a.rounds)},"
                         f" other batch sizes in 1")
            lines.append("")
            lines.append("| contestant | runs | calls/s | cycles | ms per cycle | executor ms per cycle | vs peer (same batch) "
                         "| vs bound | WAL B/call | log B/call | buffers/call | MultiXacts/call |")
            lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
            for name, r in res.items():
                kind, _, b = name.partition("@")
                peer = res.get(f"peer@{b}") if kind == "reaper" else None
                ms = r["wall_s"] * 1000 / max(r["cycles"], 1)
                vs_peer = f"{r['calls_s'] / peer['calls_s']:.2f}x" if peer else ""
                ex_ms = statistics.median(x["exec_ms"] for x in self.runs[name]) / max(r["cycles"], 1) \
                    if all(x.get("exec_ms") is not None for x in self.runs[name]) else None
                lines.append(f"| {name} | {len(self.runs[name])} | {r['calls_s']:,.0f} | {r['cycles']} | {ms:.1f} "
                             f"| {fmt(ex_ms, '.1f')} | {vs_peer} "
                             f"| {r['calls_s'] / bound:.2f}x | {fmt(self.per_call(r, 'wal'), ',.0f')} "
                             f"| {fmt(self.per_call(r, 'log'), ',.0f')} | {fmt(self.per_call(r, 'buffers'), ',.1f')} "
                             f"| {fmt(self.per_call(r, 'multixacts'), '.2f')} |")
            lines.append("")
            for text, num, den, goal in ((f"reaper/bound at batch {b0}", f"reaper@{b0}", "bound", 0.6),
                                         (f"reaper/batched-bound at batch {b0}", f"reaper@{b0}", f"batched-bound@{b0}", 0.85),
                                         (f"reaper/peer at batch {b0}", f"reaper@{b0}", f"peer@{b0}", 2.5),
                                         (f"batched-bound@{b0}/bound: the price of committed batches", f"batched-bound@{b0}", "bound", None)):
                rr = self.round_ratios(num, den)
                if not rr:
                    continue
                med = statistics.median(rr)
                each = ", ".join(f"{x:.2f}" for x in rr)
                label = f"{text} >= {goal}x" if goal else f"(no goal) {text}"
                goals.append((f"{label} (median of {len(rr)}: {each})", f"{med:.2f}x", None if goal is None else med >= goal))
            # Counted figures, which the machine's noise does not move.
            rp = res.get(f"reaper@{b0}")
            if rp and rp.get("log") is not None:
                v = self.per_call(rp, "log")
                goals.append((f"server log per call closed by reaper@{b0} <= 150 B", f"{v:,.0f} B", v <= 150))
            if rp and rp.get("wal") is not None:
                v = self.per_call(rp, "wal") / self.per_call(res["bound"], "wal")
                goals.append((f"reaper@{b0} WAL per call / one bare statement's (bound) <= 1.1x", f"{v:.2f}x", v <= 1.1))
                bb = res.get(f"batched-bound@{b0}")
                if bb:
                    v = self.per_call(rp, "wal") / self.per_call(bb, "wal")
                    goals.append((f"(no goal) reaper@{b0} WAL per call / batched-bound@{b0}'s", f"{v:.2f}x", None))
            if rp and rp.get("buffers") is not None and res["bound"].get("buffers"):
                v = self.per_call(rp, "buffers") / self.per_call(res["bound"], "buffers")
                goals.append((f"(no goal) reaper@{b0} buffers per call / bound's", f"{v:.2f}x", None))
        if self.idle:
            lines.append("| idle cycle (nothing overdue) | server median ms | server p90 ms | client median ms | buffers per cycle |")
            lines.append("|---|---:|---:|---:|---:|")
            for i in self.idle:
                bufs = f"{i['buffers']:.1f}" if i["buffers"] is not None else "n/a"
                lines.append(f"| {i['label']} | {i['server_ms']:.3f} | {i['p90_ms']:.3f} | {i['client_ms']:.3f} | {bufs} |")
            lines.append("")
            by_active = {i["active"]: i for i in self.idle if i["label"].endswith(f"history {a.history:,}")}
            if by_active:
                lo, hi = min(by_active), max(by_active)
                g = by_active[hi]["server_ms"] / by_active[lo]["server_ms"]
                goals.append((f"idle growth {lo:,} -> {hi:,} active <= 1.5x", f"{g:.2f}x", g <= 1.5))
                if by_active[lo]["buffers"] and by_active[hi]["buffers"]:
                    goals.append((f"(no goal) idle buffers growth {lo:,} -> {hi:,} active",
                                  f"{by_active[hi]['buffers'] / by_active[lo]['buffers']:.2f}x", None))
            by_hist = {i["history"]: i for i in self.idle if i["label"].startswith("history ")}
            if len(by_hist) > 1:
                lo, hi = min(by_hist), max(by_hist)
                g = by_hist[hi]["server_ms"] / by_hist[lo]["server_ms"]
                goals.append((f"idle growth {lo:,} -> {hi:,} history <= 1.5x", f"{g:.2f}x", g <= 1.5))
                if by_hist[lo]["buffers"] and by_hist[hi]["buffers"]:
                    goals.append((f"(no goal) idle buffers growth {lo:,} -> {hi:,} history",
                                  f"{by_hist[hi]['buffers'] / by_hist[lo]['buffers']:.2f}x", None))
        if self.product:
            lines.append(f"| product ({a.product_clients} clients x {a.product_rate:g} statements/s) | statements | seconds "
                         "| live-call p50 ms | live-call p99 ms | late hangups | late-hangup p99 ms "
                         "| waited on the reaper | longest wait ms | reaper cycles | cycle p50 / max ms |")
            lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
            for label, r in self.product.items():
                cyc = f"{r['cycle_p50_ms']:.1f} / {r['cycle_max_ms']:.1f}" if r["cycles"] else ""
                lines.append(f"| {label} | {r['statements']:,} | {r['wall_s']:.1f} | {r['live_p50']:.2f} | {r['live_p99']:.2f} "
                             f"| {r['late_n']:,} | {r['late_p99']:.2f} | {r['waits']:,} | {r['wait_max_ms']:.1f} "
                             f"| {r['cycles'] or ''} | {cyc} |")
            lines.append("")
            alone, during = list(self.product.values())[:2] if len(self.product) >= 2 else (None, None)
            if alone and during:
                v = during["live_p99"] / alone["live_p99"]
                goals.append(("product live-call p99 during the drain / without <= 1.5x", f"{v:.2f}x", v <= 1.5))
                ok = during["waits"] == 0 or during["wait_max_ms"] <= (during["cycle_max_ms"] or 0)
                goals.append(((f"no product statement waits on the reaper longer than one cycle ({during['waits']} waited,"
                               f" {during['wait_total_ms']:.0f} ms in all; longest cycle {during['cycle_max_ms'] or 0:.1f} ms)"),
                              f"{during['wait_max_ms']:.1f} ms", ok))
            if len(self.product) >= 3:
                paced_label, paced = list(self.product.items())[2]
                v = paced["live_p99"] / alone["live_p99"]
                goals.append((f"(no goal) product live-call p99 {paced_label} / without", f"{v:.2f}x", None))
        if self.after_drain:
            lines.append(f"| idle after a {a.backlog:,}-call drain (autovacuum on, cycles every {a.poll_interval:g} s) "
                         "| cycle | seconds after | buffers | server ms | dead rows | autovacuums since |")
            lines.append("|---|---:|---:|---:|---:|---:|---:|")
            for r in self.after_drain:
                lines.append(f"| {r['variant']} (before the drain: {r['pre']:.1f}) | {r['cycle']} | {r['t_s']:.0f} "
                             f"| {r['buffers']:.0f} | {r['ms']:.3f} | {r['dead']:,} | {r['autovacuums']} |")
            lines.append("")
            dep = [r for r in self.after_drain if r["variant"] == "as deployed"]
            pre = dep[0]["pre"]
            first = next((r["cycle"] for r in dep if r["buffers"] <= 2 * pre), None)
            goals.append(((f"idle buffers back within 2x of before the drain ({pre:.1f}) within 5 cycles, no manual VACUUM"
                           f" (right after: {dep[0]['buffers']:.0f})"),
                          "never" if first is None else f"cycle {first}", first is not None and first <= 5))
        lines.append("| goal | measured | met |")
        lines.append("|---|---:|---|")
        for text, value, ok in goals:
            lines.append(f"| {text} | {value} | {'' if ok is None else 'yes' if ok else 'NO'} |")
        lines.append("")
        lines.append(f"Total {self.total_s:.0f} s, of which seeding and resets {self.seeding_s:.0f} s."
                     f" Server log measured in {self.server_log or 'n/a (not found)'}.")
        text = "\n".join(lines)
        print("\n" + text)
        if a.markdown:
            pathlib.Path(a.markdown).write_text(machine() + "\n" + text + "\n")


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
    p.add_argument("--idle-active", type=int_list, default=int_list(env("IDLE_ACTIVE", "100,10000,100000")),
                   help="live call counts for the idle cycle (IDLE_ACTIVE, default 100,10000,100000)")
    p.add_argument("--idle-history", type=int_list, default=None,
                   help="history sizes for the idle cycle (IDLE_HISTORY, default HISTORY/10,HISTORY;"
                        " e.g. 1000000,10000000 for the 10M goal)")
    p.add_argument("--idle-cycles", type=int, default=int(env("IDLE_CYCLES", "500")),
                   help="timed idle cycles per size, after 20 warm-up ones (IDLE_CYCLES, default 500)")
    p.add_argument("--rounds", type=int, default=int(env("ROUNDS", "3")),
                   help="rounds of reaper, batched-bound and bound at the first batch size; the goals' ratios are"
                        " the median of the rounds' ratios (ROUNDS, default 3)")
    p.add_argument("--peer-rounds", type=int, default=int(env("PEER_ROUNDS", "1")),
                   help="rounds that also run the peer at the first batch size (PEER_ROUNDS, default 1)")
    p.add_argument("--parts", type=lambda t: set(t.split(",")), default=set(env("PARTS", "idle,drain,product,after-drain").split(",")),
                   help="what to run: idle, drain, product, after-drain (PARTS, default all)")
    p.add_argument("--product-clients", type=int, default=int(env("PRODUCT_CLIENTS", "4")),
                   help="product client connections (PRODUCT_CLIENTS, default 4)")
    p.add_argument("--product-rate", type=float, default=float(env("PRODUCT_RATE", "40")),
                   help="statements per second per product client (PRODUCT_RATE, default 40)")
    p.add_argument("--product-seconds", type=float, default=float(env("PRODUCT_SECONDS", "15")),
                   help="length of the product-alone run (PRODUCT_SECONDS, default 15)")
    p.add_argument("--drain-pause-ms", type=float, default=float(env("DRAIN_PAUSE_MS", "20")),
                   help="also run the product during a drain that pauses this long between cycles, 0 to skip"
                        " (DRAIN_PAUSE_MS, default 20)")
    p.add_argument("--sample-ms", type=float, default=float(env("SAMPLE_MS", "5")),
                   help="lock-wait sampling interval (SAMPLE_MS, default 5)")
    p.add_argument("--poll-interval", type=float, default=float(env("POLL_INTERVAL", "15")),
                   help="seconds between idle cycles after the drain: the job's polling interval (POLL_INTERVAL, default 15)")
    p.add_argument("--after-drain-cycles", type=int, default=int(env("AFTER_DRAIN_CYCLES", "6")),
                   help="idle cycles measured after the drain's last one (AFTER_DRAIN_CYCLES, default 6)")
    p.add_argument("--after-drain-baseline", action="store_true", default=env("AFTER_DRAIN_BASELINE", "") not in ("", "0"),
                   help="also run the after-drain part with call_sessions' autovacuum settings reset (AFTER_DRAIN_BASELINE=1)")
    p.add_argument("--partitioned", action="store_true", default=env("PARTITIONED", "") not in ("", "0"),
                   help="range-partition call_sessions by month first (PARTITIONED=1)")
    p.add_argument("--profile", action="store_true", default=env("PROFILE", "") not in ("", "0"),
                   help="print pg_stat_statements for the first reaper drain (PROFILE=1)")
    p.add_argument("--markdown", default=env("BENCH_MARKDOWN"), help="also write the tables to this file")
    args = p.parse_args()
    if args.idle_history is None:
        args.idle_history = int_list(env("IDLE_HISTORY", "")) or [max(args.history // 10, 1), args.history]
    Bench(args).run()


if __name__ == "__main__":
    main()
