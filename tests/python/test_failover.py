"""The reaper follows the primary across a Patroni failover.

Real Patroni 3.0 and etcd 3.4 on 127.0.0.1 (ports of their own; see ha_cluster.py), two nodes
bootstrapped with pg_cron in the DCS parameters, `sqitch deploy` on the leader, 5 new Ringing
calls per second (ring_timeout 5 s) through a two-host connection string with
target_session_attrs=read-write, and a backlog of several batches of due calls inserted just
before the leader's Patroni and postmaster are SIGKILLed, each by its pid, at a fixed second of
the minute (FAILOVER_KILL_SECOND, default 5: the worst case for pg_cron 1.4, whose launcher
runs a job first at the minute after it starts). Asserted:

- the new leader runs cycles with no manual step: first the shipped on_role_change callback
  (scripts/patroni-on-role-change) as soon as it is writable, then the pg_cron job itself;
- the backlog is caught up within the new leader's first tick (catch-up, not one batch a tick):
  by its cycles up to the first one that closed less than a full batch;
- every call that exists on the new leader ends closed exactly once, with exactly its outbox
  row; every insert the new leader acknowledged exists;
- no completed cycle that closed less than a full batch ran at or after a load call's due time
  and left it open, on either leader (the lag bound, as events; the lags themselves printed);
- no cycle ever starts on a standby (server logs of both nodes, and no pg_cron launcher there);
- the old leader rejoins as a streaming replica and the job keeps running only on the leader.

The timing goals are asserted as orderings of events, never as seconds: the callback's cycle
comes before the new leader's first scheduled run; no cycle that closed less than a full batch
ever ran past a due load call it left open (so the reap lag is the gap between cycles); the
backlog is closed by the first tick's catch-up chain, up to its first cycle short of a full
batch. The measured figures (time to writable, reap lags) are printed. About 2-3 minutes on 2 idle cores, most of it waiting for minute
boundaries."""

from __future__ import annotations

import os
import statistics
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime

import psycopg
import pytest
from ha_cluster import DB, POLL_S, ROOT, HaCluster
from reaper_facts import JOB_NAME, server_settings
from reaper_support import wait_for

ETCD_PORTS = (23791, 23801)
# Run details of the reaper's own job (the purge and warden jobs run too).
JOB_RUNS = ("cron.job_run_details WHERE jobid = (SELECT jobid FROM cron.job WHERE jobname = '"
            + JOB_NAME + "')")
NODES = [("n1", 25432, 28008), ("n2", 25433, 28009)]
RING_TIMEOUT_S = 5
LOAD_PER_S = 5
BACKLOG = 1000          # five batches of the default 200
MARGIN_S = 5            # the "+ 5 s" for the lag goal
KILL_SECOND = int(os.environ.get("FAILOVER_KILL_SECOND", "5"))
assert 0 <= KILL_SECOND <= 59, "FAILOVER_KILL_SECOND is a second of the minute, 0..59"

DCS = {
    "ttl": 10, "loop_wait": 1, "retry_timeout": 4,
    "maximum_lag_on_failover": 16 * 1024 * 1024,
    "postgresql": {
        "use_pg_rewind": True,
        "use_slots": True,
        "parameters": {**server_settings(), "wal_log_hints": "on"},
    },
}


@dataclass
class Load:
    """Inserts LOAD_PER_S Ringing calls per second through the two-host conninfo."""

    conninfo: str
    acked: list[tuple[uuid.UUID, float]] = field(default_factory=list)  # (call_id, ack epoch)
    errors: int = 0
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        conn = None
        next_at = time.monotonic()
        while not self.stop.is_set():
            next_at += 1 / LOAD_PER_S
            call_id = uuid.uuid4()
            try:
                if conn is None or conn.closed:
                    conn = psycopg.connect(self.conninfo, autocommit=True)
                conn.execute(
                    "INSERT INTO messenger.call_sessions (call_id, caller_user_id, callee_user_id, media_type,"
                    " status, started_at, updated_at)"
                    " VALUES (%s, gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing', now(), now())",
                    (call_id,))
                self.acked.append((call_id, time.time()))
            except psycopg.Error:
                self.errors += 1
                if conn is not None:
                    conn.close()
                conn = None
            time.sleep(max(0.0, next_at - time.monotonic()))
        if conn is not None:
            conn.close()


def _epoch(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


def _one(node, query: str, params: tuple = ()):
    with psycopg.connect(node.dsn(), autocommit=True) as conn:
        return conn.execute(query, params).fetchone()


@pytest.fixture
def cluster():
    try:
        ha = HaCluster(etcd_ports=ETCD_PORTS, nodes=NODES, dcs=DCS)
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield ha
    finally:
        ha.close()


def test_the_reaper_follows_the_primary_across_a_failover(cluster: HaCluster, capsys):
    try:
        _failover(cluster, capsys)
    except BaseException:
        print(cluster.tail())  # pytest shows it with the failure
        raise


def _failover(cluster: HaCluster, capsys) -> None:
    t0 = time.monotonic()
    n1, n2 = cluster.nodes

    # ---- bootstrap: n1 leads, n2 streams from it ----
    cluster.start_etcd()
    cluster.start(n1)
    wait_for(lambda: cluster.is_leader(n1) and cluster.writable(n1), 90, "n1 to bootstrap as leader", interval=POLL_S)
    cluster.start(n2)
    with psycopg.connect(n1.dsn("postgres"), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {DB} TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C.UTF-8'")
    wait_for(lambda: _one(n1, "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_cron launcher'")[0],
             30, "pg_cron's launcher on n1", interval=POLL_S)
    stand_in = subprocess.run(
        ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", "stand-in/messenger_service.sql",
         f"postgresql://postgres@127.0.0.1:{n1.pg_port}/{DB}"],
        check=False, cwd=ROOT, env=cluster.env, capture_output=True, text=True)
    assert stand_in.returncode == 0, stand_in.stdout + stand_in.stderr
    deploy = subprocess.run(
        ["sqitch", "deploy", f"db:pg://postgres@127.0.0.1:{n1.pg_port}/{DB}"],
        check=False, cwd=ROOT, env=cluster.env, capture_output=True, text=True)
    assert deploy.returncode == 0, deploy.stdout + deploy.stderr
    with psycopg.connect(n1.dsn(), autocommit=True) as conn:
        # The deadline wake off: with it, the old leader's next deadline cycle (a load call falls
        # due every 0.2 s) closes the backlog within a fraction of a second, before the kill, and
        # the new leader's catch-up this test is about has nothing to do (test_deadline_wake.py
        # proves the wake; the lag bound below holds either way).
        conn.execute("UPDATE messenger.call_reaper_settings SET ring_timeout = make_interval(secs => %s),"
                     " wake_at_deadline = false", (RING_TIMEOUT_S,))
        interval_s, batch = conn.execute(
            "SELECT extract(epoch FROM polling_interval)::float8, batch_size FROM messenger.call_reaper_settings"
        ).fetchone()
    assert BACKLOG >= 3 * batch, "the backlog must be several batches to exercise the catch-up"
    wait_for(lambda: cluster.is_streaming_replica(n2), 90, "n2 to stream from n1", interval=POLL_S)
    bootstrapped_s = time.monotonic() - t0

    # ---- steady load; the old leader's job runs; then a backlog and the kill ----
    load = Load(" ".join([
        "host=127.0.0.1,127.0.0.1", f"port={n1.pg_port},{n2.pg_port}", f"dbname={DB}", "user=postgres",
        "target_session_attrs=read-write", "connect_timeout=1"]))
    loader = threading.Thread(target=load.run, daemon=True)
    loader.start()
    try:
        # pg_cron 1.4 runs a new job at the next minute, or the one after if it loads mid-minute.
        wait_for(lambda: _one(n1, f"SELECT count(*) FROM {JOB_RUNS}")[0], 130,
                 "the first scheduled run on n1", interval=POLL_S)
        t_steady = time.time()
        # The kill second of the next minute that leaves the backlog a second before it.
        now = time.time()
        kill_at = now - now % 60 + KILL_SECOND
        while kill_at - 2 < now:
            kill_at += 60
        time.sleep(kill_at - 2 - time.time())
        with psycopg.connect(n1.dsn(), autocommit=True) as conn:
            backlog = [r[0] for r in conn.execute(
                "INSERT INTO messenger.call_sessions (call_id, caller_user_id, callee_user_id, media_type,"
                " status, started_at, updated_at)"
                " SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing', t, t"
                " FROM (SELECT now() - interval '1 minute' - g * interval '1 ms' AS t"
                "       FROM generate_series(1, %s) AS g) AS s RETURNING call_id", (BACKLOG,))]
        time.sleep(max(0.0, kill_at - time.time()))
        t_kill = time.time()
        cluster.kill(n1)

        # ---- failover ----
        wait_for(lambda: cluster.writable(n2), 90, "n2 to accept writes", interval=0.05)
        t_writable = time.time()
        first_cycle = wait_for(
            lambda: _one(n2, "SELECT min(started_at) FROM messenger.call_reaper_runs WHERE started_at > to_timestamp(%s)",
                         (t_kill,))[0],
            interval_s + MARGIN_S + 60, "a cycle on the new leader", interval=POLL_S)
        t_first = first_cycle.timestamp()
        t_rejoin_start = time.time()
        cluster.start(n1)
        wait_for(lambda: cluster.is_streaming_replica(n1), 90, "the old leader to rejoin as a replica", interval=POLL_S)
        t_rejoined = time.time()
        # The scheduled job itself, not only the callback: at the latest at the minute after
        # the promotion (pg_cron 1.4), then at every tick.
        wait_for(lambda: _one(n2, f"SELECT count(*) FROM {JOB_RUNS} AND start_time > to_timestamp(%s)",
                              (t_writable,))[0],
                 60 + interval_s + MARGIN_S, "a scheduled run on the new leader", interval=POLL_S)
        # One more tick with the old leader back as a replica.
        # last_run_at: an idle tick leaves no ledger row, it is counted apart.
        wait_for(lambda: _one(n2, "SELECT last_run_at > to_timestamp(%s) FROM messenger.call_reaper_metrics()",
                              (t_rejoined,))[0],
                 interval_s + MARGIN_S, "a cycle after the rejoin", interval=POLL_S)
    finally:
        load.stop.set()
        loader.join(10)

    # ---- every call on the new leader closes exactly once, with exactly its outbox row ----
    with psycopg.connect(n2.dsn(), autocommit=True) as conn:
        wait_for(lambda: conn.execute(
            "SELECT count(*) = 0 FROM messenger.call_sessions WHERE status = 'Ringing'").fetchone()[0],
            RING_TIMEOUT_S + 2 * interval_s + MARGIN_S, "every call to be closed", interval=POLL_S)
        calls = {r[0]: r[1:] for r in conn.execute(
            "SELECT call_id, status, end_reason, extract(epoch FROM started_at)::float8,"
            " extract(epoch FROM ended_at)::float8 FROM messenger.call_sessions")}
        pushes = conn.execute(
            "SELECT reference_id, count(*), bool_and(kind = 'CallMissed'), min(target_id), max(target_id)"
            " FROM messenger.realtime_outbox GROUP BY reference_id").fetchall()
        callers = dict(conn.execute("SELECT call_id, 'user:' || caller_user_id FROM messenger.call_sessions"))
        failed_runs = conn.execute(
            "SELECT count(*) FROM messenger.call_reaper_runs WHERE result = 'failed'").fetchone()[0]
        new_leader_cycles = conn.execute(
            "SELECT count(*) FROM messenger.call_reaper_runs WHERE started_at > to_timestamp(%s)",
            (t_kill,)).fetchone()[0]
        launchers = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_cron launcher'").fetchone()[0]
        first_scheduled = conn.execute(
            f"SELECT min(start_time) FROM {JOB_RUNS} AND start_time > to_timestamp(%s)",
            (t_kill,)).fetchone()[0]
        load_calls = [c for c, _ in load.acked]
        # Load calls are inserted at their started_at, so they existed before any cycle that
        # found them due; a cycle short of a full batch saw every due call.
        passed_over = conn.execute(
            "SELECT count(*) FROM messenger.call_sessions AS c"
            "  JOIN messenger.call_reaper_runs AS r ON r.result = 'completed'"
            "   AND r.as_of >= c.started_at + make_interval(secs => %s) AND r.as_of < c.ended_at"
            "   AND r.missed_count < r.batch_size"
            " WHERE c.call_id = ANY(%s)", (RING_TIMEOUT_S, load_calls)).fetchone()[0]
        # The first tick on the new leader chains cycles while they close full batches.
        backlog_after_first_tick = conn.execute(
            "SELECT count(*) FROM messenger.call_sessions AS c"
            " WHERE c.call_id = ANY(%s) AND c.ended_at > to_timestamp(%s)"
            "   AND c.ended_at > (SELECT r.as_of FROM messenger.call_reaper_runs AS r"
            "                      WHERE r.started_at > to_timestamp(%s) AND r.result = 'completed'"
            "                        AND r.missed_count < r.batch_size"
            "                      ORDER BY r.started_at LIMIT 1)",
            (backlog, t_kill, t_kill)).fetchone()[0]
    with psycopg.connect(n1.dsn(), autocommit=True) as conn:
        assert conn.execute("SELECT pg_is_in_recovery()").fetchone()[0]
        replica_launchers = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_cron launcher'").fetchone()[0]

    assert {(s, reason) for s, reason, _, _ in calls.values()} == {("Missed", "Timeout")}
    assert {r[0] for r in pushes} == set(calls), "a closed call without its push, or a push without its call"
    for call_id, n, all_missed, lo, hi in pushes:
        assert (n, all_missed, lo, hi) == (1, True, callers[call_id], callers[call_id]), call_id
    assert failed_runs == 0
    # Acknowledged once n2 was writable: n1 was dead by then, so n2 acknowledged it.
    acked_after = [c for c, at in load.acked if at > t_writable]
    assert acked_after and all(c in calls for c in acked_after), "an insert the new leader acknowledged is missing"
    lost = [c for c, at in load.acked if at <= t_kill and c not in calls]

    # ---- the figures ----
    to_writable = t_writable - t_kill
    to_first = t_first - t_kill
    due = {c: (started + RING_TIMEOUT_S, ended) for c, (_, _, started, ended) in calls.items()}
    backlog_here = [c for c in backlog if c in calls]
    # Calls due once the old leader's job was in steady state (before, nothing was scheduled).
    load_ids = [c for c, _ in load.acked if c in calls and due[c][0] >= t_steady]
    lags = [due[c][1] - due[c][0] for c in load_ids]
    window = [due[c][1] - due[c][0] for c in load_ids if t_kill - interval_s <= due[c][0] <= t_first + interval_s]
    max_lag = max(lags)
    backlog_done = max(due[c][1] for c in backlog_here) - t_first if backlog_here else 0.0
    backlog_by_new = sum(1 for c in backlog_here if due[c][1] > t_kill)

    rewound = "running pg_rewind from" in (n1.dir / "patroni.log").read_text(errors="replace")
    bound = to_writable + interval_s + MARGIN_S
    report = (f"kill at second {KILL_SECOND}: writable {to_writable:.1f} s, first cycle {to_first:.1f} s "
              f"(callback {t_first - t_writable:+.1f} s after writable), max reap lag {max_lag:.1f} s "
              f"(bound {bound:.1f} s; calls due around the failover: {len(window)}, max {max(window):.1f} s, "
              f"median {statistics.median(window):.1f} s), "
              f"backlog {backlog_by_new}/{len(backlog_here)} closed by the new leader "
              f"{backlog_done:.1f} s after its first cycle, {new_leader_cycles} cycles on the new leader, "
              f"rejoined {t_rejoined - t_rejoin_start:.1f} s after restart{' (pg_rewind)' if rewound else ''}, {len(load.acked)} calls acked "
              f"({len(lost)} lost with the old leader, {load.errors} failed inserts), "
              f"bootstrap {bootstrapped_s:.0f} s, total {time.monotonic() - t0:.0f} s")
    with capsys.disabled():
        print(f"\nfailover: {report}")

    # ---- no cycle on a standby, ever ----
    n2_promoted = min(t for t, _ in n2.log_lines(r"selected new timeline ID|archive recovery complete"))
    # A cycle's one LOG record (cycle_completed), or a deadline closure's (deadline_closed).
    ran = r"call_reaper event=(cycle_completed|deadline_closed)"
    n2_cycles = [t for t, _ in n2.log_lines(ran)]
    n1_cycles = [t for t, _ in n1.log_lines(ran)]
    assert n2_cycles and min(n2_cycles) >= n2_promoted, "a cycle ran on n2 while it was a standby"
    assert n1_cycles and max(n1_cycles) < t_kill, "a cycle ran on n1 after it lost the lead"
    assert (launchers, replica_launchers) == (1, 0)

    # ---- timing, as orderings of events ----
    assert first_scheduled is not None and first_cycle < first_scheduled, \
        "no immediate first cycle on the new primary: its first cycle was the scheduled job's"
    assert passed_over == 0, f"{passed_over} due calls were left open by a cycle short of a full batch; {report}"
    assert backlog_by_new > 0, "the backlog was closed before the kill: the catch-up was not exercised"
    assert backlog_after_first_tick == 0, "the backlog took more than the first tick's catch-up chain"
