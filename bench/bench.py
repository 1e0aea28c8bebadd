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
  * idle: cycles with nothing overdue, timed server-side (the cycle's own duration_ms), at
    several counts of active calls that are not yet overdue and at several history sizes.

Between drains the backlog is reset in place (delete the bench's recent calls, re-insert them,
VACUUM with INDEX_CLEANUP ON) rather than restored from a template: the history is never
touched, so a reset costs the same at 1M and 10M, and VACUUM leaves no dead index entries behind
to slow the next contestant down.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import time
import uuid

import psycopg

# The bench lives in its own far-future window so no clock-driven job ever finds its rows
# overdue; every cycle gets this as_of.
AS_OF = dt.datetime(2099, 6, 1, 12, 0, tzinfo=dt.UTC)
HISTORY_SPAN_DAYS = 365
RECENT = dt.timedelta(days=3)  # history ends here; backlog and live calls start after it
LOCK_KEY = 7161124095527313776
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

    # ---- data -----------------------------------------------------------------------------
    def prepare(self) -> None:
        a = self.admin
        if a.execute("SELECT to_regprocedure('messenger.reap_call_timeouts(integer,interval,interval,timestamptz)')").fetchone()[0] is None:
            sys.exit("bench: messenger.reap_call_timeouts is not deployed in this database")
        # The scheduled job must not compete for the single-runner lock while we measure.
        if a.execute("SELECT to_regclass('cron.job')").fetchone()[0] is not None:
            a.execute("SELECT cron.unschedule(jobid) FROM cron.job WHERE jobname = 'messenger-call-timeout-reaper'")
        if a.execute("SELECT count(*) FROM messenger.call_sessions").fetchone()[0]:
            sys.exit("bench: messenger.call_sessions is not empty; run the bench on a throwaway database")
        if self.args.partitioned:
            log("converting messenger.call_sessions to monthly range partitions (sql/partition_call_sessions.sql)")
            a.execute((REPO / "sql" / "partition_call_sessions.sql").read_text())
            # Partition maintenance is the DBA's (see docs/partitioning.md); the bench lives in
            # 2098-2099, so it creates the months it seeds.
            a.execute(
                "SELECT messenger.call_sessions_add_partitions(%s, %s)",
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
                    if not c.execute("SELECT pg_try_advisory_xact_lock(%s)", (LOCK_KEY,)).fetchone()[0]:
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
                "  FROM pg_stat_statements WHERE toplevel AND query LIKE '%%messenger.reap_call_timeouts(NULL%%'").fetchone()
            buffers = row[0]
        self.idle.append({"label": label, "history": self.history, "active": active,
                          "server_ms": statistics.median(server), "client_ms": statistics.median(client),
                          "p90_ms": statistics.quantiles(server, n=10)[-1], "buffers": buffers})
        log(f"idle {label}: median {statistics.median(server):.3f} ms server-side")

    # ---- orchestration --------------------------------------------------------------------
    def run_drains(self) -> None:
        backlog = self.args.backlog
        ringing = backlog // 2
        plan = []
        for _ in range(self.args.rounds):
            for b in self.args.batches:
                plan.append((f"reaper@{b}", lambda b=b: self.drain_reaper(b)))
                plan.append((f"peer@{b}", lambda b=b: self.drain_peer(b)))
            plan.append((f"batched-bound@{self.args.batches[0]}", lambda: self.drain_batched_bound(self.args.batches[0])))
            plan.append(("bound", self.drain_bound))
        for name, fn in plan:
            self.reset_recent(ringing, backlog - ringing, self.args.live)
            if self.args.profile and name == f"reaper@{self.args.batches[0]}" and name not in self.results:
                self.profile_reset()
            r = fn()
            self.check_drained(name, backlog)
            if self.args.profile and name == f"reaper@{self.args.batches[0]}" and name not in self.results:
                self.profile_print(name)
            r["calls_s"] = backlog / r["wall_s"]
            log(f"{name}: {backlog:,} calls in {r['wall_s']:.2f} s = {r['calls_s']:,.0f} calls/s, {r['cycles']} cycles")
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
        self.prepare()
        levels = sorted(set(self.args.idle_history) | {self.args.history})
        for level in levels:
            self.grow_history(level)
            if level in self.args.idle_history:
                self.reset_recent(0, 0, 100)
                self.idle_cycle(f"history {level:,}, 100 active", 100)
            if level == self.args.history:
                for active in self.args.idle_active:
                    self.reset_recent(0, 0, active)
                    self.idle_cycle(f"{active:,} active, history {level:,}", active)
                self.run_drains()
        self.total_s = time.perf_counter() - t_start
        self.report()

    def report(self) -> None:
        a = self.args
        res = self.results
        b0 = a.batches[0]
        bound = res["bound"]["calls_s"]
        lines = []
        lines.append(f"Backlog {a.backlog:,} overdue calls ({a.backlog // 2:,} Ringing, {a.backlog - a.backlog // 2:,} stale Answered), "
                     f"history {a.history:,}, {a.live:,} live calls, {'partitioned' if a.partitioned else 'plain'} call_sessions"
                     f", median of {a.rounds} round(s)")
        lines.append("")
        lines.append("| contestant | calls/s | cycles | ms per cycle | vs peer (same batch) | vs bound |")
        lines.append("|---|---:|---:|---:|---:|---:|")
        for name, r in res.items():
            kind, _, b = name.partition("@")
            peer = res.get(f"peer@{b}") if kind == "reaper" else None
            ms = r["wall_s"] * 1000 / max(r["cycles"], 1)
            vs_peer = f"{r['calls_s'] / peer['calls_s']:.2f}x" if peer else ""
            lines.append(f"| {name} | {r['calls_s']:,.0f} | {r['cycles']} | {ms:.1f} | {vs_peer} | {r['calls_s'] / bound:.2f}x |")
        lines.append("")
        lines.append("| idle cycle (nothing overdue) | server median ms | server p90 ms | client median ms | buffers per cycle |")
        lines.append("|---|---:|---:|---:|---:|")
        for i in self.idle:
            bufs = f"{i['buffers']:.1f}" if i["buffers"] is not None else "n/a"
            lines.append(f"| {i['label']} | {i['server_ms']:.3f} | {i['p90_ms']:.3f} | {i['client_ms']:.3f} | {bufs} |")
        lines.append("")
        goals = []
        r = res[f"reaper@{b0}"]["calls_s"]
        p = res[f"peer@{b0}"]["calls_s"]
        goals.append((f"reaper/peer at batch {b0} >= 2.5x", r / p, r / p >= 2.5))
        goals.append((f"reaper/bound at batch {b0} >= 0.6x", r / bound, r / bound >= 0.6))
        if f"batched-bound@{b0}" in res:
            bb = res[f"batched-bound@{b0}"]["calls_s"]
            goals.append((f"(no goal) reaper/batched-bound at batch {b0}", r / bb, None))
            goals.append((f"(no goal) batched-bound@{b0}/bound: the price of committed batches", bb / bound, None))
        by_active = {i["active"]: i for i in self.idle if i["label"].endswith(f"history {a.history:,}")}
        if by_active:
            lo, hi = min(by_active), max(by_active)
            g = by_active[hi]["server_ms"] / by_active[lo]["server_ms"]
            goals.append((f"idle growth {lo:,} -> {hi:,} active <= 1.5x", g, g <= 1.5))
            if by_active[lo]["buffers"] and by_active[hi]["buffers"]:
                goals.append((f"(no goal) idle buffers growth {lo:,} -> {hi:,} active",
                              by_active[hi]["buffers"] / by_active[lo]["buffers"], None))
        by_hist = {i["history"]: i for i in self.idle if i["label"].startswith("history ")}
        if len(by_hist) > 1:
            lo, hi = min(by_hist), max(by_hist)
            g = by_hist[hi]["server_ms"] / by_hist[lo]["server_ms"]
            goals.append((f"idle growth {lo:,} -> {hi:,} history <= 1.5x", g, g <= 1.5))
            if by_hist[lo]["buffers"] and by_hist[hi]["buffers"]:
                goals.append((f"(no goal) idle buffers growth {lo:,} -> {hi:,} history",
                              by_hist[hi]["buffers"] / by_hist[lo]["buffers"], None))
        lines.append("| goal | measured | met |")
        lines.append("|---|---:|---|")
        for text, value, ok in goals:
            lines.append(f"| {text} | {value:.2f}x | {'' if ok is None else 'yes' if ok else 'NO'} |")
        lines.append("")
        lines.append(f"Total {self.total_s:.0f} s, of which seeding and resets {self.seeding_s:.0f} s.")
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
    p.add_argument("--rounds", type=int, default=int(env("ROUNDS", "1")),
                   help="repeat the drains, report each contestant's median (ROUNDS, default 1)")
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
