"""The reaper on a call_sessions the service partitioned (docs/partitioning.md).

The stand-in's partitioned variant plays the service's migration: call_sessions range-partitioned
by month of started_at with pg_partman, a DEFAULT partition, months made ahead, pg_partman's
maintenance a pg_cron job of the service's LOGIN role; here without the service's index of
active calls, so that the reaper builds its ix_call_due (beside the product's own it builds
none: test_index_ownership.py). It lives in a database of its own; the
reaper is deployed there with --set scheduler=none (pg_cron runs jobs only in
cron.database_name), and cycles are run by hand. Checked:
- the deploy is online (a writer on the partitioned table never waits a second for a lock: lock_timeout, never 55P03), puts
  ix_call_due on every partition, attached, and cycles close the due calls of several partitions
  and of the DEFAULT one with their outbox rows;
- a partition pg_partman's maintenance makes after the deploy gets ix_call_due, and its calls
  are reaped;
- an old partition detached and dropped by the service while cycles run: no cycle fails, every
  due call closes once;
- revert leaves every product row, partition and index, and pg_partman's job; deploy again.
The two tests share one database, the second deploying again if the first stopped early.
"""

from __future__ import annotations

import datetime as dt
import threading
import time

import psycopg
import pytest
from adoption_support import (
    Writer,
    create_product_database,
    drop_product_database,
    partman_job_name,
    product_objects,
    product_rows,
    reaper_objects,
    sqitch,
)

DB = "adopt_partitioned"
NO_CRON = ("--set", "scheduler=none")
GOAL_S = 1.0

# Leaf partitions of call_sessions that no part of the reaper's ix_call_due covers.
UNCOVERED_SQL = """
SELECT t.relid::regclass::text
  FROM pg_partition_tree('messenger.call_sessions') AS t
 WHERE t.isleaf
   AND NOT EXISTS (SELECT FROM pg_partition_tree('messenger.ix_call_due') AS x
                     JOIN pg_index AS i ON i.indexrelid = x.relid
                    WHERE x.isleaf AND i.indrelid = t.relid)
 ORDER BY 1"""
DUE_INDEX_VALID_SQL = "SELECT indisvalid FROM pg_index WHERE indexrelid = 'messenger.ix_call_due'::regclass"
PARTITIONS_SQL = """
SELECT c.relname::text FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid
 WHERE i.inhparent = 'messenger.call_sessions'::regclass ORDER BY 1"""

# The service's calls: 30,000 ended over the last 80 days (three monthly partitions), 300 Ringing
# past the answer window and 100 Answered without progress for 3 h in this month's partition, one
# Ringing call of a month without a partition (in the DEFAULT one), outbox rows of its own.
SEED_SQL = """
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, end_reason,
        started_at, answered_at, ended_at, updated_at, duration_seconds)
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ended', 'Hangup', t, t, t, t, 0
  FROM generate_series(1, 30000) AS g, LATERAL (SELECT now() - g * interval '230 seconds') AS x (t);
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, updated_at)
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Video', 'Ringing', t, t
  FROM generate_series(1, 300) AS g, LATERAL (SELECT now() - interval '10 minutes' - g * interval '1 second') AS x (t);
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Answered',
       now() - interval '5 hours', now() - interval '5 hours' + interval '5 seconds', now() - interval '3 hours'
  FROM generate_series(1, 100);
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, updated_at)
VALUES (gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing',
        now() - interval '400 days', now() - interval '400 days');
INSERT INTO messenger.realtime_outbox (kind, target_kind, target_id, reference_id, payload)
SELECT 'MessageCreated', 'User', 'user:' || gen_random_uuid(), gen_random_uuid(), '{}'
  FROM generate_series(1, 500);
ANALYZE messenger.call_sessions, messenger.realtime_outbox;
"""


@pytest.fixture(scope="module")
def product(dsn):
    """The partitioned product database, seeded: (connection, its dsn, the instant after seeding,
    its product objects before any deploy)."""
    with psycopg.connect(dsn, autocommit=True) as admin:
        product_dsn = create_product_database(admin, DB, partitioned=True, active_index=False)
        with psycopg.connect(product_dsn, autocommit=True) as conn:
            conn.execute(SEED_SQL)
            seeded = conn.execute("SELECT now()").fetchone()[0]
            yield conn, product_dsn, seeded, product_objects(conn)
        drop_product_database(admin, DB)


def uncovered(conn: psycopg.Connection) -> list[str]:
    return [r[0] for r in conn.execute(UNCOVERED_SQL)]


def drain(conn: psycopg.Connection, **args: object) -> tuple[int, int]:
    """Cycles until one closes nothing; (missed, failed) in all."""
    missed = failed = 0
    params = ", ".join(f"{k} => %({k})s" for k in args)
    while True:
        m, f = conn.execute(f"SELECT missed_count, failed_count FROM messenger.reap_call_timeouts({params})",
                            args).fetchone()
        if m == 0 and f == 0:
            return missed, failed
        missed, failed = missed + m, failed + f


def partman_job(admin: psycopg.Connection) -> tuple | None:
    return admin.execute("""
        SELECT j.username::text, j.database::text, j.command, r.rolcanlogin
          FROM cron.job AS j JOIN pg_roles AS r ON r.rolname = j.username
         WHERE j.jobname = %s""", (partman_job_name(DB),)).fetchone()


def test_online_deploy_indexes_every_partition_reaps_them_and_covers_new_ones(product, conn):
    db, dsn, seeded, _ = product
    assert partman_job(conn) == ("messenger_service", DB, "CALL partman.run_maintenance_proc(p_jobmon => false)",
                                 True), "pg_partman's maintenance must run as the service's LOGIN role"

    writer = Writer(dsn, lock_timeout_s=GOAL_S)
    writer.start()
    time.sleep(0.5)
    started = time.monotonic()
    sqitch("deploy", DB, *NO_CRON)
    deploy_s = time.monotonic() - started
    time.sleep(0.5)
    writer.stop.set()
    writer.join(10)
    assert writer.error is None, f"the writer failed: {writer.error!r}"
    longest = max(writer.waits)
    print(f"\nonline deploy onto {len(db.execute(PARTITIONS_SQL).fetchall())} partitions: {deploy_s:.1f} s; "
          f"the writer ran {len(writer.waits)} statements meanwhile, longest wait {longest * 1000:.0f} ms")
    assert len(writer.waits) > 100, "the writer must have run during the deploy"

    # (sqitch verify on the partitioned stand-in: scripts/test-in-cluster's pgTAP step.)
    assert uncovered(db) == [], "the deploy left partitions without ix_call_due"
    assert db.execute(DUE_INDEX_VALID_SQL).fetchone() == (True,)

    # Every seeded due call closes, wherever it lies; the writer's calls are not due yet.
    assert drain(db, batch_size=1000) == (301, 100)
    closed = db.execute("""
        SELECT count(*) FILTER (WHERE c.status IN ('Ringing', 'Answered')),
               array_agg(DISTINCT c.tableoid::regclass::text) FILTER (WHERE c.status IN ('Missed', 'Failed'))
          FROM messenger.call_sessions AS c WHERE c.started_at < %s""", (seeded,)).fetchone()
    assert closed[0] == 0, "a seeded due call is still active"
    assert "messenger.call_sessions_default" in closed[1] and len(closed[1]) >= 2, closed[1]
    pushes = db.execute("""
        SELECT o.kind, count(*), count(DISTINCT o.reference_id)
          FROM messenger.realtime_outbox AS o WHERE o.correlation_id IS NOT NULL
         GROUP BY o.kind ORDER BY o.kind""").fetchall()
    assert pushes == [("CallEnded", 200, 100), ("CallMissed", 301, 301)]

    # The service's maintenance, as its pg_cron job runs it, makes two more months ahead.
    before = [r[0] for r in db.execute(PARTITIONS_SQL)]
    db.execute("UPDATE partman.part_config SET premake = premake + 2 WHERE parent_table = 'messenger.call_sessions'")
    with psycopg.connect(dsn, autocommit=True) as service:
        service.execute("SET ROLE messenger_service")
        service.execute("SET TimeZone = 'UTC'")
        service.execute("CALL partman.run_maintenance_proc(p_jobmon => false)")
    new = sorted({r[0] for r in db.execute(PARTITIONS_SQL)} - set(before))
    assert len(new) == 2, f"maintenance made {new}"
    assert uncovered(db) == [], "a partition made after the deploy has no ix_call_due"
    assert db.execute(DUE_INDEX_VALID_SQL).fetchone() == (True,)
    db.execute("UPDATE messenger.call_reaper_settings SET allow_future_as_of = true")
    late = db.execute("""
        INSERT INTO messenger.call_sessions
               (call_id, caller_user_id, callee_user_id, media_type, status, started_at, updated_at)
        SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing', t, t
          FROM (SELECT child_start_time + interval '1 hour' FROM partman.show_partition_info(%s)) AS x (t)
        RETURNING call_id, started_at""", (f"messenger.{new[-1]}",)).fetchone()
    # (The writer's calls are due by then too.)
    drain(db, as_of=late[1] + dt.timedelta(minutes=1))
    assert db.execute("SELECT status, tableoid::regclass::text FROM messenger.call_sessions WHERE call_id = %s",
                      (late[0],)).fetchone() == ("Missed", f"messenger.{new[-1]}")


class Reaper(threading.Thread):
    """Cycles of batch 20, 10 ms apart, on their own connection, until stopped."""

    def __init__(self, dsn: str) -> None:
        super().__init__(daemon=True)
        self.dsn = dsn
        self.stop = threading.Event()
        self.cycles: list[tuple[bool, int]] = []
        self.error: psycopg.Error | None = None

    def run(self) -> None:
        try:
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                while not self.stop.is_set():
                    self.cycles.append(conn.execute(
                        "SELECT lock_acquired, missed_count FROM messenger.reap_call_timeouts(batch_size => 20)").fetchone())
                    time.sleep(0.01)
        except psycopg.Error as exc:  # reported by the test, not lost in the thread
            self.error = exc


def test_old_partition_detached_and_dropped_while_cycles_run_then_revert_keeps_the_product(product, conn):
    db, dsn, _, objects_before_deploy = product
    sqitch("deploy", DB, *NO_CRON)  # done by the first test, unless it stopped early
    oldest = min(r[0] for r in db.execute(PARTITIONS_SQL) if r[0] != "call_sessions_default")
    assert db.execute(f"SELECT count(*) FROM messenger.{oldest}").fetchone()[0] > 0, "the old month holds history"
    due = db.execute("""
        WITH made AS (
            INSERT INTO messenger.call_sessions
                   (call_id, caller_user_id, callee_user_id, media_type, status, started_at, updated_at)
            SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing', t, t
              FROM generate_series(1, 1000) AS g,
                   LATERAL (SELECT now() - interval '10 minutes' - g * interval '10 milliseconds') AS x (t)
            RETURNING call_id)
        SELECT array_agg(call_id) FROM made""").fetchone()[0]

    reaper = Reaper(dsn)
    reaper.start()
    deadline = time.monotonic() + 30
    while len(reaper.cycles) < 5 and reaper.error is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(reaper.cycles) >= 5, f"the reaper did not cycle: {reaper.error!r}"
    # What pg_partman's retention does (without keeping the table), as the service's role.
    with psycopg.connect(dsn, autocommit=True) as service:
        service.execute("SET ROLE messenger_service")
        service.execute("SET lock_timeout = '5s'")
        started = time.monotonic()
        service.execute(f"ALTER TABLE messenger.call_sessions DETACH PARTITION messenger.{oldest}")
        service.execute(f"DROP TABLE messenger.{oldest}")
        detach_s = time.monotonic() - started
    during = len(reaper.cycles)
    while reaper.error is None and time.monotonic() < deadline and db.execute(
            "SELECT count(*) FROM messenger.call_sessions WHERE call_id = ANY(%s) AND status = 'Ringing'",
            (due,)).fetchone()[0]:
        time.sleep(0.05)
    reaper.stop.set()
    reaper.join(10)
    print(f"\ndetached and dropped {oldest} in {detach_s * 1000:.0f} ms after {during} cycles;"
          f" {len(reaper.cycles)} cycles in all")
    assert reaper.error is None, f"a cycle failed: {reaper.error!r}"
    assert len(reaper.cycles) > during, "the reaper must have cycled after the drop"
    assert all(acquired for acquired, _ in reaper.cycles)
    assert db.execute("SELECT count(*) FROM messenger.call_reaper_runs WHERE result = 'failed'").fetchone() == (0,)
    assert db.execute("""
        SELECT count(*) FILTER (WHERE c.status = 'Missed'), count(o.id)
          FROM messenger.call_sessions AS c
          LEFT JOIN messenger.realtime_outbox AS o ON o.reference_id = c.call_id AND o.kind = 'CallMissed'
         WHERE c.call_id = ANY(%s)""", (due,)).fetchone() == (len(due), len(due)), "each due call closes once"
    assert uncovered(db) == []
    assert db.execute(DUE_INDEX_VALID_SQL).fetchone() == (True,)

    # Revert gives back every partition, index and row of the service's: what it had before the
    # deploy but the dropped month, and the months maintenance made since; its pg_partman job too.
    rows_before = product_rows(db)
    job_before = partman_job(conn)
    sqitch("revert", DB, "-y")
    assert reaper_objects(db) == [], "revert left something of the reaper behind"
    after = product_objects(db)
    kept = [f for f in objects_before_deploy if oldest not in f]
    assert [f for f in kept if f not in after] == [], "revert removed or changed a product object"
    made = {r[0] for r in db.execute(PARTITIONS_SQL)} - {f.split()[1] for f in kept if f.startswith("relation ")}
    assert [f for f in after if f not in kept and not any(p in f for p in made)] == [], \
        "revert left an object that is neither the service's nor a partition made since the deploy"
    assert product_rows(db) == rows_before, "revert changed or removed a product row"
    assert partman_job(conn) == job_before

    # Round trip: the reaper deploys again onto the partitions and closes what is due.
    sqitch("deploy", DB, *NO_CRON)
    assert uncovered(db) == []
    db.execute("""
        INSERT INTO messenger.call_sessions
               (call_id, caller_user_id, callee_user_id, media_type, status, started_at, updated_at)
        VALUES (gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing',
                now() - interval '1 minute', now() - interval '1 minute')""")
    assert drain(db)[0] >= 1
