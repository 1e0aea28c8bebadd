"""The reaper's indexes are its own by record and definition, a failed build leaves nothing, and
the locks it takes on the product's tables queue no writer for long.

Each test makes a database with the messenger service's stand-in tables (tests/python/
adoption_support.py), optionally turns call_sessions into a simple declaratively partitioned
table (three monthly partitions and a default, as a service's own migration would), and runs
sqitch as a DBA would (--set scheduler=none). A stopped build is stopped in a fresh deploy:
Sqitch then reverts the changes before it, and the first of them that can tell the build's
leftover from the product's (functions/_call_reaper_index_leftovers) drops it.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import threading
import time

import psycopg
import pytest
from adoption_support import ROOT, create_product_database, reaper_objects, sqitch
from reaper_support import wait_for

NO_CRON = ("--set", "scheduler=none")

# Every index on the product's two tables and their partitions, with validity and comment:
# what a failed deploy must give back exactly.
TABLE_INDEXES_SQL = """
SELECT format('%s valid=%s comment=%s', pg_get_indexdef(i.indexrelid), i.indisvalid,
              obj_description(i.indexrelid, 'pg_class'))
  FROM pg_index AS i
 WHERE i.indrelid IN (SELECT 'messenger.call_sessions'::regclass UNION ALL SELECT 'messenger.realtime_outbox'::regclass
                      UNION ALL SELECT inhrelid FROM pg_inherits WHERE inhparent = 'messenger.call_sessions'::regclass)
"""

PARTITIONED = """
ALTER TABLE messenger.call_sessions RENAME TO call_sessions_plain;
CREATE TABLE messenger.call_sessions (LIKE messenger.call_sessions_plain INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
    PARTITION BY RANGE (started_at);
DROP TABLE messenger.call_sessions_plain;
ALTER TABLE messenger.call_sessions ADD PRIMARY KEY (call_id, started_at);
CREATE TABLE messenger.call_sessions_m0 PARTITION OF messenger.call_sessions
    FOR VALUES FROM (date_trunc('month', now()) - interval '2 months') TO (date_trunc('month', now()) - interval '1 month');
CREATE TABLE messenger.call_sessions_m1 PARTITION OF messenger.call_sessions
    FOR VALUES FROM (date_trunc('month', now()) - interval '1 month') TO (date_trunc('month', now()));
CREATE TABLE messenger.call_sessions_m2 PARTITION OF messenger.call_sessions
    FOR VALUES FROM (date_trunc('month', now())) TO (date_trunc('month', now()) + interval '1 month');
CREATE TABLE messenger.call_sessions_default PARTITION OF messenger.call_sessions DEFAULT;
ALTER TABLE messenger.call_sessions OWNER TO messenger_service;
ALTER TABLE messenger.call_sessions_m0 OWNER TO messenger_service;
ALTER TABLE messenger.call_sessions_m1 OWNER TO messenger_service;
ALTER TABLE messenger.call_sessions_m2 OWNER TO messenger_service;
ALTER TABLE messenger.call_sessions_default OWNER TO messenger_service;
GRANT SELECT, INSERT, UPDATE, DELETE ON messenger.call_sessions TO messenger_app;
"""

# A call in the month before this one: it lands in call_sessions_m1, the second partition built.
CALL_IN_M1 = """
INSERT INTO messenger.call_sessions (call_id, caller_user_id, callee_user_id, media_type, status, end_reason,
                                     started_at, answered_at, ended_at, updated_at, duration_seconds)
VALUES (gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ended', 'Hangup',
        date_trunc('month', now()) - interval '10 days', date_trunc('month', now()) - interval '10 days',
        date_trunc('month', now()) - interval '10 days', date_trunc('month', now()) - interval '10 days', 1)
"""
OUTBOX_ROW = """
INSERT INTO messenger.realtime_outbox (kind, target_kind, target_id, reference_id, payload)
VALUES ('MessageCreated', 'User', 'user:' || gen_random_uuid(), gen_random_uuid(), '{}')
"""


ACTIVE_INDEX = """
CREATE INDEX ix_call_active ON messenger.call_sessions (status, started_at)
    WHERE status IN ('Ringing', 'Answered')
"""


def product_db(admin: psycopg.Connection, name: str, partitioned: bool, calls: int = 3000,
               active_index: bool = False) -> str:
    """The stand-in, by default without the service's index of active calls: these tests are
    about the index the deploy builds where the product has none (with one it builds nothing)."""
    dsn = create_product_database(admin, name, "text", active_index=active_index)
    with psycopg.connect(dsn, autocommit=True) as conn:
        if partitioned:
            conn.execute(PARTITIONED)
            if active_index:
                conn.execute(ACTIVE_INDEX)
        # Ended calls spread over the three months (the reaper's index holds none of them).
        conn.execute(f"""
            INSERT INTO messenger.call_sessions (call_id, caller_user_id, callee_user_id, media_type, status, end_reason,
                                                 started_at, answered_at, ended_at, updated_at, duration_seconds)
            SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ended', 'Hangup', t, t, t, t, 1
              FROM generate_series(1, {calls}) AS g,
                   LATERAL (SELECT date_trunc('month', now()) - interval '2 months' + g * (interval '80 days' / {calls})) AS x (t)""")
        conn.execute("INSERT INTO messenger.realtime_outbox (kind, target_kind, target_id, reference_id, payload)"
                     " SELECT 'MessageCreated', 'User', 'user:' || gen_random_uuid(), gen_random_uuid(), '{}'"
                     " FROM generate_series(1, 1000)")
    return dsn


def table_indexes(conn: psycopg.Connection) -> list[str]:
    return sorted(r[0] for r in conn.execute(TABLE_INDEXES_SQL))


def deployed_changes(conn: psycopg.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT change FROM sqitch.changes ORDER BY committed_at, change")]


def build_at(conn: psycopg.Connection, relation: str, phase: str) -> int:
    """The pid of the CREATE INDEX CONCURRENTLY on `relation` once it is at `phase`."""
    return wait_for(lambda: conn.execute("""SELECT max(pid) FROM pg_stat_progress_create_index
                                             WHERE relid = %s::regclass AND phase = %s""",
                                          (relation, phase)).fetchone()[0],
                    30, f"the build on {relation} to reach '{phase}'", interval=0.02)


WAITS = ["waiting for writers before build", "waiting for writers before validation", "waiting for old snapshots"]


def stop_build_at(admin_dsn: str, db: str, relation: str, wait: str, write: str, how: str) -> subprocess.CompletedProcess:
    """sqitch deploy, whose build on `relation` is held at `wait` by product transactions and
    then cancelled (as Ctrl-C or a statement_timeout do) or its connection terminated."""
    with psycopg.connect(admin_dsn) as t1, psycopg.connect(admin_dsn) as t2, psycopg.connect(admin_dsn) as t3, \
            psycopg.connect(admin_dsn, autocommit=True) as watch:
        t1.execute(write)          # a writer in flight when the build starts: the first wait
        run = subprocess.Popen(["sqitch", "deploy", *NO_CRON, f"db:pg:{db}"], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        pid = build_at(watch, relation, WAITS[0])
        if wait != WAITS[0]:
            t2.execute(write)      # writes during the first scan: the build waits again before validating
            t1.commit()
            pid = build_at(watch, relation, WAITS[1])
            if wait != WAITS[1]:
                t3.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
                t3.execute("SELECT count(*) FROM pg_catalog.pg_class")   # an old snapshot
                t2.commit()
                pid = build_at(watch, relation, WAITS[2])
        signal = "pg_cancel_backend" if how == "cancel" else "pg_terminate_backend"
        assert watch.execute(f"SELECT {signal}(%s)", (pid,)).fetchone() == (True,)
        # The product carries on: the reverts' DROP INDEX CONCURRENTLY waits for its transactions.
        for t in (t1, t2, t3):
            t.rollback()
        out, _ = run.communicate(timeout=180)
    return subprocess.CompletedProcess(run.args, run.returncode, out, "")


CASES = [("ix_call_due", False, w, "cancel") for w in WAITS] \
    + [("ix_call_due", True, w, "cancel") for w in WAITS] \
    + [("ux_realtime_outbox_call_event", False, WAITS[0], "cancel"),
       ("ux_realtime_outbox_call_event", False, WAITS[2], "terminate")]


@pytest.mark.parametrize("index,partitioned,wait,how", CASES)
def test_a_build_stopped_at_any_wait_leaves_nothing_and_the_next_deploy_builds_it(conn, index, partitioned, wait, how):
    db = "idx_stopped"
    dsn = product_db(conn, db, partitioned)
    with psycopg.connect(dsn, autocommit=True) as product:
        indexes_before = table_indexes(product)
        # On the partitioned table the second partition's build is stopped: the first one's is
        # built and attached by then, the parent's ON ONLY index exists, the third is recorded.
        relation = {"ux_realtime_outbox_call_event": "messenger.realtime_outbox"}.get(
            index, "messenger.call_sessions_m1" if partitioned else "messenger.call_sessions")
        # A writer's lock on that relation alone (on a partition: not on the parent, whose ON ONLY
        # index would wait for it), as an INSERT or UPDATE in flight there holds.
        write = f"LOCK TABLE {relation} IN ROW EXCLUSIVE MODE"
        done = stop_build_at(dsn, db, relation, wait, write, how)
        assert done.returncode != 0, done.stdout
        assert "Reverting" in done.stdout, done.stdout
        assert table_indexes(product) == indexes_before, \
            f"the failed deploy left something on the product's tables\n{done.stdout}"
        assert deployed_changes(product) == []
        assert product.execute("SELECT to_regclass('messenger.call_reaper_indexes')").fetchone() == (None,)

        sqitch("deploy", db, *NO_CRON)
        sqitch("verify", db, *NO_CRON)
        recorded = product.execute("SELECT count(*) FROM messenger.call_reaper_indexes WHERE index_name = %s",
                                   (index,)).fetchone()
        assert recorded == (1,)
    conn.execute(f"DROP DATABASE {db} WITH (FORCE)")


FRESH_CASES = [(False, WAITS[0], "cancel"), (True, WAITS[2], "terminate")]


@pytest.mark.parametrize("partitioned,wait,how", FRESH_CASES)
def test_a_fresh_deploy_whose_outbox_build_is_stopped_leaves_nothing(conn, partitioned, wait, how):
    """On a partitioned call_sessions too (the changes reverted before the leftover is dropped
    include ix_call_due's parts on every partition): stopped, the outbox build leaves an INVALID
    index, recorded, that the revert of functions/_call_reaper_index_leftovers drops."""
    db = "idx_fresh_stopped"
    dsn = product_db(conn, db, partitioned)
    with psycopg.connect(dsn, autocommit=True) as product:
        indexes_before = table_indexes(product)
        write = "LOCK TABLE messenger.realtime_outbox IN ROW EXCLUSIVE MODE"
        done = stop_build_at(dsn, db, "messenger.realtime_outbox", wait, write, how)
        assert done.returncode != 0, done.stdout
        assert "Reverting" in done.stdout, done.stdout
        assert table_indexes(product) == indexes_before, \
            f"the failed fresh deploy left something on the product's tables\n{done.stdout}"
        assert deployed_changes(product) == []
        assert reaper_objects(product) == []

        sqitch("deploy", db, *NO_CRON)
        sqitch("verify", db, *NO_CRON)
    conn.execute(f"DROP DATABASE {db} WITH (FORCE)")


def test_a_product_index_named_ix_call_due_is_refused_and_left_as_it_was(conn):
    db = "idx_product_name"
    dsn = product_db(conn, db, False)
    with psycopg.connect(dsn, autocommit=True) as product:
        product.execute("CREATE INDEX ix_call_due ON messenger.call_sessions (callee_user_id)")
        indexes_before = table_indexes(product)
        done = sqitch("deploy", db, *NO_CRON, check=False)
        out = done.stdout + done.stderr
        assert done.returncode != 0
        assert "messenger.ix_call_due is not the reaper's index; nothing was changed" in out, out
        assert "It is USING btree (callee_user_id) on messenger.call_sessions" in out, out
        assert table_indexes(product) == indexes_before, "the product's ix_call_due was marked, rebuilt or dropped"
        assert product.execute("SELECT count(*) FROM pg_proc WHERE pronamespace = 'messenger'::regnamespace"
                               " AND proname LIKE '%reap%'").fetchone() == (0,)
    conn.execute(f"DROP DATABASE {db} WITH (FORCE)")


def test_a_product_index_of_the_reapers_definition_is_used_and_never_dropped(conn):
    db = "idx_product_same"
    dsn = product_db(conn, db, False)
    with psycopg.connect(dsn, autocommit=True) as product:
        product.execute("""CREATE UNIQUE INDEX ux_realtime_outbox_call_event ON messenger.realtime_outbox
                           (kind, reference_id, target_id) WHERE kind IN ('CallMissed', 'CallEnded')""")
        oid = product.execute("SELECT 'messenger.ux_realtime_outbox_call_event'::regclass::oid").fetchone()
        sqitch("deploy", db, *NO_CRON)
        sqitch("verify", db, *NO_CRON)
        assert product.execute("SELECT count(*) FROM messenger.call_reaper_indexes"
                               " WHERE index_name = 'ux_realtime_outbox_call_event'").fetchone() == (0,)
        sqitch("revert", db, "-y")
        assert product.execute("SELECT to_regclass('messenger.ux_realtime_outbox_call_event')::oid,"
                               " obj_description('messenger.ux_realtime_outbox_call_event'::regclass, 'pg_class')"
                               ).fetchone() == (oid[0], None)
    conn.execute(f"DROP DATABASE {db} WITH (FORCE)")


def test_revert_refuses_while_a_product_index_uses_call_due_key(conn):
    db = "idx_product_due"
    dsn = product_db(conn, db, False)
    with psycopg.connect(dsn, autocommit=True) as product:
        sqitch("deploy", db, *NO_CRON)
        product.execute("CREATE INDEX product_due ON messenger.call_sessions"
                        " (messenger.call_due_key(status, started_at, updated_at))")
        indexes_before = table_indexes(product)
        done = sqitch("revert", db, "-y", check=False)
        out = done.stdout + done.stderr
        assert done.returncode != 0
        assert "messenger.call_due_key is used by an index that is not the reaper's: messenger.product_due" in out, out
        # It stopped at functions/call_due_key: the changes after it stay reverted, among them
        # the reaper's two indexes (dropped); every other index is as it was.
        ours = (" ix_call_due ", " ux_realtime_outbox_call_event ")
        assert [d for d in table_indexes(product) if not any(o in d for o in ours)] == \
            [d for d in indexes_before if not any(o in d for o in ours)]
        assert product.execute("SELECT to_regclass('messenger.ix_call_due'),"
                               " to_regclass('messenger.ux_realtime_outbox_call_event')").fetchone() == (None, None)
        product.execute("DROP INDEX messenger.product_due")
        sqitch("revert", db, "-y")
    conn.execute(f"DROP DATABASE {db} WITH (FORCE)")



# A due call of each phase, and the cycle that closes them, as the claims' index walk finds them.
DUE_CALLS = """
INSERT INTO messenger.call_sessions (call_id, caller_user_id, callee_user_id, media_type, status,
                                     started_at, answered_at, updated_at)
VALUES (gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing',
        now() - interval '10 minutes', NULL, now() - interval '10 minutes'),
       (gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Video', 'Answered',
        now() - interval '5 hours', now() - interval '5 hours', now() - interval '4 hours')
"""
CYCLE = "SELECT missed_count, failed_count FROM messenger.reap_call_timeouts()"


@pytest.mark.parametrize("partitioned", [False, True])
def test_the_products_index_of_active_calls_is_used_and_the_reaper_builds_none(conn, partitioned):
    """Where the service has its own index of active calls (the stand-in's ix_call_active), the
    claims read it: the deploy builds no ix_call_due and records nothing for it, so the product's
    writes pay for no index of the reaper's; a cycle still closes due calls of both phases; a
    full revert leaves the product's indexes exactly as they were, its own index among them."""
    db = "idx_adopt"
    dsn = product_db(conn, db, partitioned, active_index=True)
    with psycopg.connect(dsn, autocommit=True) as product:
        active = product.execute("SELECT 'messenger.ix_call_active'::regclass::oid").fetchone()
        call_indexes_before = [d for d in table_indexes(product) if "realtime_outbox" not in d]
        indexes_before = table_indexes(product)
        done = sqitch("deploy", db, *NO_CRON)
        assert "messenger.ix_call_active is the product's index of active calls" in done.stdout + done.stderr, done.stdout
        sqitch("verify", db, *NO_CRON)
        assert [d for d in table_indexes(product) if "realtime_outbox" not in d] == call_indexes_before, \
            "the deploy added an index to call_sessions (or its partitions) beside the product's own"
        assert product.execute("SELECT to_regclass('messenger.ix_call_due')").fetchone() == (None,)
        assert product.execute("SELECT count(*) FROM messenger.call_reaper_indexes"
                               " WHERE index_name LIKE '%ix_call_due%' OR attach_to IS NOT NULL").fetchone() == (0,)
        assert product.execute("SELECT x::oid FROM messenger._call_reaper_claim_indexes('messenger.call_sessions') AS x"
                               ).fetchall() == [active]
        product.execute(DUE_CALLS)
        assert product.execute(CYCLE).fetchone() == (1, 1)
        sqitch("revert", db, "-y")
        assert table_indexes(product) == indexes_before
        assert product.execute("SELECT 'messenger.ix_call_active'::regclass::oid").fetchone() == active
    conn.execute(f"DROP DATABASE {db} WITH (FORCE)")


def runbook_index_steps() -> tuple[str, str]:
    """The runbook's psql command that builds ix_call_due again, and its REINDEX statement."""
    section = (ROOT / "docs/runbooks/call-timeout-reaper.md").read_text().split(
        "\n## The claims' index, rebuilt online\n", 1)[1].split("\n## ", 1)[0]
    build = re.search(r"^psql .*-f deploy/indexes/ix_call_due\.sql$", section, re.MULTILINE)
    reindex = re.search(r"^REINDEX INDEX CONCURRENTLY messenger\.ix_call_due;$", section, re.MULTILINE)
    assert build and reindex, "the runbook's index steps moved"
    return build[0], reindex[0]


def test_when_the_service_drops_its_index_verify_says_so_and_the_runbooks_step_builds_ix_call_due(conn):
    """The claims read the service's ix_call_active; a later migration of the service drops it.
    The cycle still closes due calls (by a slower plan), `sqitch verify` fails naming what is
    missing, and the runbook's step (the deploy script of indexes/ix_call_due run again with
    psql, nothing else of the plan) builds the reaper's own index online, after which verify
    passes and the claims read it; its REINDEX CONCURRENTLY keeps it the reaper's."""
    db = "idx_adopt_dropped"
    dsn = product_db(conn, db, False, active_index=True)
    build, reindex = runbook_index_steps()
    with psycopg.connect(dsn, autocommit=True) as product:
        sqitch("deploy", db, *NO_CRON)
        product.execute("DROP INDEX messenger.ix_call_active")
        product.execute(DUE_CALLS)
        assert product.execute(CYCLE).fetchone() == (1, 1)
        done = sqitch("verify", db, *NO_CRON, check=False)
        assert done.returncode != 0
        assert "messenger.call_sessions has no index the claims can read" in done.stdout + done.stderr, done.stdout
        # As the DBA pastes it, in the release's directory; only the database is this test's.
        command = shlex.split(build.replace("-d messenger", "-d " + shlex.quote(dsn)))
        ran = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
        assert ran.returncode == 0, ran.stdout + ran.stderr
        sqitch("verify", db, *NO_CRON)
        assert product.execute("SELECT array_agg(x::text) FROM messenger._call_reaper_claim_indexes('messenger.call_sessions') AS x"
                               ).fetchone() == (["messenger.ix_call_due"],)
        assert product.execute("SELECT count(*) FROM messenger.call_reaper_indexes WHERE index_name = 'ix_call_due'"
                               ).fetchone() == (1,)
        before = table_indexes(product)
        product.execute(reindex)
        assert table_indexes(product) == before, "REINDEX changed the index's definition, validity or comment"
        sqitch("verify", db, *NO_CRON)
        assert product.execute("SELECT count(*) FROM messenger.call_reaper_indexes WHERE index_name = 'ix_call_due'"
                               " AND shape = messenger._call_reaper_index_shape('messenger.ix_call_due')").fetchone() == (1,)
    conn.execute(f"DROP DATABASE {db} WITH (FORCE)")


def test_a_full_revert_drops_the_index_parts_left_on_detached_partitions(conn):
    """A partition detached and kept keeps its part of ix_call_due as a standalone index: the
    deploy's own (<partition>_ix_call_due, recorded) goes with the revert. One PostgreSQL named,
    on a partition made after the deploy, names no reaper function (ix_call_due is (status,
    started_at, call_id)) and was never recorded, so nothing tells it from the service's own
    index: it stays (CONTRIBUTING.md, "Changing the schema"). Nothing else of those tables changes."""
    db = "idx_detached_kept"
    dsn = product_db(conn, db, True)
    on_detached = """SELECT array_agg(pg_get_indexdef(indexrelid) ORDER BY 1) FROM pg_index
                      WHERE indrelid IN ('messenger.call_sessions_m0'::regclass, 'messenger.call_sessions_m3'::regclass)"""
    with psycopg.connect(dsn, autocommit=True) as product:
        sqitch("deploy", db, *NO_CRON)
        product.execute("""
            CREATE TABLE messenger.call_sessions_m3 PARTITION OF messenger.call_sessions
                FOR VALUES FROM (date_trunc('month', now()) + interval '1 month') TO (date_trunc('month', now()) + interval '2 months');
            ALTER TABLE messenger.call_sessions DETACH PARTITION messenger.call_sessions_m3;
            ALTER TABLE messenger.call_sessions DETACH PARTITION messenger.call_sessions_m0""")
        parts = sorted(r[0] for r in product.execute(
            "SELECT indexrelid::regclass::text FROM pg_index WHERE pg_get_indexdef(indexrelid) LIKE '%(status, started_at, call_id)%'"
            " AND indrelid IN ('messenger.call_sessions_m0'::regclass, 'messenger.call_sessions_m3'::regclass)"))
        assert parts == ["messenger.call_sessions_m0_ix_call_due",
                         "messenger.call_sessions_m3_status_started_at_call_id_idx"], parts
        before = product.execute(on_detached).fetchone()[0]
        done = sqitch("revert", db, "-y", check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        after = product.execute(on_detached).fetchone()[0]
        assert sorted(set(before) - set(after)) == [d for d in before if "call_sessions_m0_ix_call_due" in d], after
        assert set(after) <= set(before)
        assert reaper_objects(product) == []
    conn.execute(f"DROP DATABASE {db} WITH (FORCE)")


class Product(threading.Thread):
    """A writer every 10 ms (insert a call, then an outbox row) with a lock_timeout (500 ms
    unless told), and beside it a transaction that holds a call's row for 3 s, again and again.
    renew_when (a query) makes the hold start afresh the first time it returns true: so that a
    step which follows that moment meets a hold with nearly 3 s to go, whatever the timing."""

    def __init__(self, dsn: str, lock_timeout: str = "500ms", renew_when: str | None = None) -> None:
        super().__init__(daemon=True)
        self.dsn = dsn
        self.lock_timeout = lock_timeout
        self.renew_when = renew_when
        self.stop = threading.Event()
        self.waits: list[float] = []
        self.lock_timeouts = 0
        self.error: psycopg.Error | None = None

    def hold(self) -> None:
        try:
            with psycopg.connect(self.dsn) as conn, psycopg.connect(self.dsn, autocommit=True) as watch:
                while not self.stop.is_set():
                    conn.execute("UPDATE messenger.call_sessions SET updated_at = updated_at"
                                 " WHERE call_id = (SELECT call_id FROM messenger.call_sessions LIMIT 1)")
                    held = time.monotonic()
                    while time.monotonic() - held < 3 and not self.stop.is_set():
                        renew = self.renew_when   # a test may set it later
                        if renew and watch.execute(renew).fetchone()[0]:
                            self.renew_when = None
                            break
                        time.sleep(0.01)
                    conn.commit()
        except psycopg.Error as exc:
            self.error = exc

    def run(self) -> None:
        holder = threading.Thread(target=self.hold, daemon=True)
        holder.start()
        try:
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                conn.execute(f"SET lock_timeout = '{self.lock_timeout}'")
                while not self.stop.is_set():
                    for statement in (CALL_IN_M1.replace("'Audio'", "'Video'"), OUTBOX_ROW):
                        started = time.monotonic()
                        try:
                            conn.execute(statement)
                        except psycopg.errors.LockNotAvailable:
                            self.lock_timeouts += 1
                        self.waits.append(time.monotonic() - started)
                    time.sleep(0.01)
        except psycopg.Error as exc:  # reported by the test, not lost in the thread
            self.error = exc
        holder.join(10)


def under_product_load(dsn: str, action, lock_timeout: str = "500ms",
                       renew_when: str | None = None) -> tuple[float, int, int, float]:
    product = Product(dsn, lock_timeout, renew_when)
    product.start()
    time.sleep(1)
    started = time.monotonic()
    action()
    took = time.monotonic() - started
    product.stop.set()
    product.join(15)
    assert product.error is None, repr(product.error)
    return max(product.waits), product.lock_timeouts, len(product.waits), took


def test_a_partitioned_deploy_and_revert_queue_no_writer_past_a_short_lock_wait(conn):
    db = "idx_locks"
    dsn = product_db(conn, db, True, calls=100_000)
    with psycopg.connect(dsn, autocommit=True) as product:
        deploy = under_product_load(dsn, lambda: sqitch("deploy", db, *NO_CRON))
        sqitch("verify", db, *NO_CRON)
        revert = under_product_load(dsn, lambda: sqitch("revert", db, "-y", "--to", "indexes/ix_call_due^"))
        calls = product.execute("SELECT count(*) FROM messenger.call_sessions").fetchone()[0]
    print(f"\npartitioned call_sessions, {calls:,} calls, a writer every 10 ms, a row held 3 s in a loop:"
          f" deploy {deploy[3]:.1f} s, longest writer wait {deploy[0] * 1000:.0f} ms over {deploy[2]} statements;"
          f" revert of ix_call_due and after {revert[3]:.1f} s, longest writer wait {revert[0] * 1000:.0f} ms over {revert[2]} statements")
    assert deploy[1] == 0, f"{deploy[1]} writer statements hit lock_timeout = 500ms during the deploy"
    assert revert[1] == 0, f"{revert[1]} writer statements hit lock_timeout = 500ms during the revert"
    assert deploy[2] > 100 and revert[2] > 10
    conn.execute(f"DROP DATABASE {db} WITH (FORCE)")



def test_a_full_revert_of_a_partitioned_deploy_queues_no_writer_past_a_short_lock_wait(conn):
    """A full revert reaches ix_call_due's revert, whose partitioned index cannot be
    dropped concurrently: its DROP INDEX waits 100 ms at a time for the product's locks. The
    product's hold starts afresh when the outbox index goes (the revert just before), so a plain
    DROP INDEX would queue the writer behind nearly all of a 3 s hold."""
    db = "idx_full_revert_locks"
    dsn = product_db(conn, db, True, calls=100_000)
    with psycopg.connect(dsn, autocommit=True) as product:
        sqitch("deploy", db, *NO_CRON)
        revert = under_product_load(dsn, lambda: sqitch("revert", db, "-y"), lock_timeout="250ms",
                                    renew_when="SELECT to_regclass('messenger.ux_realtime_outbox_call_event') IS NULL")
        assert reaper_objects(product) == []
        calls = product.execute("SELECT count(*) FROM messenger.call_sessions").fetchone()[0]
    print(f"\npartitioned call_sessions, {calls:,} calls, a writer every 10 ms, a row held 3 s in a loop:"
          f" full revert {revert[3]:.1f} s, longest writer wait {revert[0] * 1000:.0f} ms over {revert[2]} statements")
    assert revert[1] == 0, f"{revert[1]} writer statements hit lock_timeout = 250ms during the full revert"
    assert revert[2] > 10
    conn.execute(f"DROP DATABASE {db} WITH (FORCE)")


@pytest.mark.parametrize("partitioned", [False, True])
def test_a_stopped_fresh_due_index_build_is_undone_without_queueing_writers(conn, partitioned):
    """A fresh deploy's ix_call_due build, stopped (cancelled at its first wait), is undone by
    the revert of functions/_call_reaper_index_leftovers, which Sqitch runs: plain leftovers go
    concurrently, a partitioned parent 100 ms at a time. The product writes meanwhile (lock_timeout
    250 ms) beside a row held 3 s that starts afresh at the cancel."""
    db = "idx_fresh_due_stopped"
    dsn = product_db(conn, db, partitioned)
    relation = "messenger.call_sessions_m1" if partitioned else "messenger.call_sessions"
    with psycopg.connect(dsn, autocommit=True) as product, psycopg.connect(dsn) as writer_in_flight:
        indexes_before = table_indexes(product)
        writer_in_flight.execute(f"LOCK TABLE {relation} IN ROW EXCLUSIVE MODE")
        run = subprocess.Popen(["sqitch", "deploy", *NO_CRON, f"db:pg:{db}"], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        pid = build_at(product, relation, WAITS[0])
        load = Product(dsn, "250ms")
        load.start()
        time.sleep(1)
        load.renew_when = "SELECT true"
        assert product.execute("SELECT pg_cancel_backend(%s)", (pid,)).fetchone() == (True,)
        writer_in_flight.rollback()
        out, _ = run.communicate(timeout=180)
        load.stop.set()
        load.join(15)
        assert load.error is None, repr(load.error)
        assert run.returncode != 0 and "Reverting" in out, out
        assert table_indexes(product) == indexes_before, f"the failed deploy left an index\n{out}"
        assert reaper_objects(product) == []
    print(f"\nstopped fresh ix_call_due build ({'partitioned' if partitioned else 'plain'}), reverted under"
          f" a writer: longest writer wait {max(load.waits) * 1000:.0f} ms over {len(load.waits)} statements")
    assert load.lock_timeouts == 0, f"{load.lock_timeouts} writer statements hit lock_timeout = 250ms"
    conn.execute(f"DROP DATABASE {db} WITH (FORCE)")


def test_a_fresh_partitioned_deploy_queues_no_writer_past_a_short_lock_wait(conn):
    """A fresh deploy's ix_call_due script: its ON ONLY (a SHARE lock on the
    parent) and its ATTACHes wait 100 ms at a time for the product's locks: the product's 3 s hold
    starts afresh when _call_reaper_claim_indexes appears (the change just before), so one long wait would
    queue every writer (lock_timeout 250 ms) behind nearly all of it."""
    db = "idx_fresh_partitioned_locks"
    dsn = product_db(conn, db, True, calls=100_000)
    with psycopg.connect(dsn, autocommit=True) as product:
        deploy = under_product_load(
            dsn, lambda: sqitch("deploy", db, *NO_CRON), lock_timeout="250ms",
            renew_when="SELECT to_regprocedure('messenger._call_reaper_claim_indexes(regclass)') IS NOT NULL")
        sqitch("verify", db, *NO_CRON)
        calls = product.execute("SELECT count(*) FROM messenger.call_sessions").fetchone()[0]
    print(f"\npartitioned call_sessions, {calls:,} calls, a writer every 10 ms, a row held 3 s in a loop:"
          f" fresh deploy {deploy[3]:.1f} s, longest writer wait {deploy[0] * 1000:.0f} ms over {deploy[2]} statements")
    assert deploy[1] == 0, f"{deploy[1]} writer statements hit lock_timeout = 250ms during the fresh deploy"
    assert deploy[2] > 100
    conn.execute(f"DROP DATABASE {db} WITH (FORCE)")
