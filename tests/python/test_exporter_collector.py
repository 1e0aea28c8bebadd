"""The Collector against the real database: what it publishes after real reaper cycles, and how
it behaves when the database is unreachable, slow or drops the connection."""

from __future__ import annotations

import logging
import socket
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from call_reaper_exporter import BUILD, METRICS, PREFIX, ReaperCollector
from exporter_support import collect_once, sample, samples_of
from prometheus_client import CollectorRegistry
from reaper_facts import LOCK_KEY_SQL
from reaper_facts import MONITOR_ROLE as MONITOR
from reaper_support import reap, wait_for

P = PREFIX
# What a scrape serves when the database does not answer: up 0 and the build info, nothing else.
DOWN = {(P + "up", frozenset()): 0, (P + "build_info", frozenset(BUILD.items())): 1}
# Far in the future, so the scheduled job (whose as_of is now) never finds these calls due.
T = datetime(2100, 1, 1, tzinfo=UTC)
POISON_CALLER = uuid.UUID("00000000-0000-0000-0000-00000000d3ad")


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def exporter_backends(conn: psycopg.Connection) -> list[int]:
    return [r[0] for r in conn.execute(
        "SELECT pid FROM pg_stat_activity WHERE usename = %s"
        " AND application_name = 'call-reaper-exporter'", [MONITOR])]


def insert_call(conn, status: str, started_at: datetime, updated_at: datetime,
                caller: uuid.UUID | None = None) -> uuid.UUID:
    call_id = uuid.uuid4()
    conn.execute(
        "INSERT INTO messenger.call_sessions (call_id, caller_user_id, callee_user_id,"
        " media_type, status, started_at, answered_at, updated_at)"
        " VALUES (%s, %s, %s, 'Video', %s, %s, %s, %s)",
        [call_id, caller or uuid.uuid4(), uuid.uuid4(), status, started_at,
         started_at if status == "Answered" else None, updated_at])
    return call_id


def delta(after, before, name, **labels) -> float:
    return sample(after, name, **labels) - sample(before, name, **labels)


def test_registering_does_not_touch_the_database(conn, monitor_dsn):
    collector = ReaperCollector(monitor_dsn)
    before = set(exporter_backends(conn))
    CollectorRegistry(auto_describe=True).register(collector)
    assert set(exporter_backends(conn)) <= before, "register() (describe) opened a connection"
    collect_once(collector)
    assert len(set(exporter_backends(conn)) - before) == 1, "collect() does connect"
    collector.close()


def test_describe_and_collect_serve_the_same_families(monitor_dsn, reaper_paused):
    """Both come from the one METRICS table: same names, types and help, in the same order."""
    collector = ReaperCollector(monitor_dsn)
    described = [(f.name, f.type, f.documentation) for f in collector.describe()]
    collected = [(f.name, f.type, f.documentation) for f in collector.collect()]
    collector.close()
    assert collected == described
    # build_info beside the table: it describes the process, not the database.
    assert described[0][0] == P + "build_info"
    assert len(described) == len(METRICS) + 1 == 17


def test_every_metrics_column_feeds_exactly_one_family(conn):
    """No column of call_reaper_metrics() is left unpublished and no family reads a column that
    is not there (the published names on both sides)."""
    columns = {c.name for c in conn.execute(
        "SELECT * FROM messenger.call_reaper_metrics()").description}
    read = [column for spec in METRICS for column in spec.columns()]
    assert len(read) == len(set(read)), "two families read the same column"
    assert set(read) == columns


def test_publishes_real_cycles(conn, make_conn, monitor_dsn, reaper_paused):
    """Counter, histogram and timestamp deltas equal exactly what real cycles did."""
    # Close every call that is due by the end of this scenario first (other tests' leftovers),
    # so the cycles below find only this test's calls.
    for _ in range(50):
        drained = reap(conn, as_of=T + timedelta(hours=3), batch_size=10000)
        if drained["missed_count"] + drained["failed_count"] == 0:
            break
    collector = ReaperCollector(monitor_dsn)
    before = collect_once(collector)

    with conn.transaction():
        ringing = [insert_call(conn, "Ringing", T, T) for _ in range(3)]
        poison = insert_call(conn, "Ringing", T, T, caller=POISON_CALLER)
        answered = [insert_call(conn, "Answered", T - timedelta(minutes=1), T) for _ in range(2)]

    # A real skipped run: another session holds the single-runner lock.
    holder = make_conn(autocommit=False)
    holder.execute(f"SELECT pg_advisory_xact_lock({LOCK_KEY_SQL})")
    assert reap(conn, as_of=T + timedelta(seconds=48))["result"] == "skipped"
    holder.rollback()

    # Cycle 1, 3 s past the ring window: three Missed, one poison call (a product trigger
    # refuses it). The trigger lives and dies inside this transaction: no other session sees it.
    with conn.transaction():
        conn.execute(f"""
            CREATE FUNCTION pg_temp.refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF NEW.caller_user_id = '{POISON_CALLER}' THEN RAISE EXCEPTION 'poison'; END IF;
                RETURN NEW;
            END $$""")
        conn.execute("CREATE TRIGGER test_metrics_poison BEFORE UPDATE ON messenger.call_sessions"
                     " FOR EACH ROW EXECUTE FUNCTION pg_temp.refuse_poison()")
        first = reap(conn, as_of=T + timedelta(seconds=48))
        conn.execute("DROP TRIGGER test_metrics_poison ON messenger.call_sessions")
    assert (first["result"], first["missed_count"], first["poisoned_count"]) == ("completed", 3, 1)
    middle = collect_once(collector)
    assert delta(middle, before, P + "items_total", outcome="poisoned") == 1
    assert delta(middle, before, P + "errors_total") == 1
    assert delta(middle, before, P + "quarantined_calls") == 1

    # Cycle 2, 25 s past the stale window: two Failed, and the poison call (its backoff over,
    # the trigger gone) is Missed 7180 s after its window.
    second = reap(conn, as_of=T + timedelta(hours=2, seconds=25))
    assert (second["result"], second["missed_count"], second["failed_count"]) == ("completed", 1, 2)
    statuses = dict(conn.execute(
        "SELECT call_id, status FROM messenger.call_sessions WHERE call_id = ANY(%s)",
        [[*ringing, poison, *answered]]).fetchall())
    assert statuses == {**{c: "Missed" for c in [*ringing, poison]},
                        **{c: "Failed" for c in answered}}

    after = collect_once(collector)
    collector.close()
    assert sample(after, P + "up") == 1
    assert delta(after, before, P + "run_total", result="completed") == 2
    assert delta(after, before, P + "run_total", result="skipped") == 1
    assert delta(after, before, P + "run_total", result="failed") == 0
    assert delta(after, before, P + "run_total", result="idle") == 0  # an as_of cycle is recorded
    assert delta(after, before, P + "items_total", outcome="missed") == 4
    assert delta(after, before, P + "items_total", outcome="failed") == 2
    assert delta(after, before, P + "items_total", outcome="poisoned") == 1
    assert delta(after, before, P + "errors_total") == 1
    assert delta(after, before, P + "skip_locked_total") == 0
    assert delta(after, before, P + "quarantined_calls") == 0, "closed calls leave quarantine"

    # Two cycles held the lock (the skipped one is not timed); the sum is what each cycle said
    # it took, and each took real time.
    assert delta(after, before, P + "cycle_duration_seconds_count") == 2
    assert delta(after, before, P + "cycle_duration_seconds_bucket", le="+Inf") == 2
    assert first["duration_ms"] > 0 and second["duration_ms"] > 0
    assert delta(after, before, P + "cycle_duration_seconds_sum") == pytest.approx(
        float(first["duration_ms"] + second["duration_ms"]) / 1000, abs=1e-6)

    # Lags 3, 3, 3 (cycle 1), 25, 25 and 7180 (cycle 2) seconds, in cumulative buckets.
    lag = P + "reap_lag_seconds"
    assert delta(after, before, lag + "_count") == 6
    assert delta(after, before, lag + "_sum") == pytest.approx(3 * 3 + 2 * 25 + 7180)
    expected = {"1.0": 0, "2.5": 0, "5.0": 3, "20.0": 3, "30.0": 5, "3600.0": 5, "+Inf": 6}
    assert {le: delta(after, before, lag + "_bucket", le=le) for le in expected} == expected

    last_run, last_success = conn.execute(
        "SELECT extract(epoch FROM last_run_at)::float8, extract(epoch FROM last_success_at)::float8"
        " FROM messenger.call_reaper_counters").fetchone()
    assert sample(after, P + "last_run_timestamp_seconds") == pytest.approx(last_run, abs=1e-6)
    assert sample(after, P + "last_success_timestamp_seconds") == pytest.approx(
        last_success, abs=1e-6)
    assert sample(after, P + "last_success_timestamp_seconds") > sample(
        before, P + "last_success_timestamp_seconds")


def test_backlog_counts_overdue_active_calls_now(conn, monitor_dsn, reaper_paused):
    collector = ReaperCollector(monitor_dsn)
    before = collect_once(collector)
    now = conn.execute("SELECT now()").fetchone()[0]
    ringing = insert_call(conn, "Ringing", now - timedelta(minutes=10), now - timedelta(minutes=10))
    answered = insert_call(conn, "Answered", now - timedelta(hours=4), now - timedelta(hours=3))
    insert_call(conn, "Ringing", now + timedelta(days=1), now + timedelta(days=1))  # not due
    during = collect_once(collector)
    assert delta(during, before, P + "active_backlog", phase="ring_timeout") == 1
    assert delta(during, before, P + "active_backlog", phase="stale_answered") == 1

    # The product closes them itself: they leave the backlog without any reaper cycle.
    conn.execute("UPDATE messenger.call_sessions SET status = 'Declined', end_reason = 'Declined',"
                 " ended_at = now(), updated_at = now() WHERE call_id = %s", [ringing])
    conn.execute("UPDATE messenger.call_sessions SET status = 'Ended', end_reason = 'Hangup',"
                 " ended_at = now(), updated_at = now(), duration_seconds = 60"
                 " WHERE call_id = %s", [answered])
    after = collect_once(collector)
    collector.close()
    assert delta(after, before, P + "active_backlog", phase="ring_timeout") == 0
    assert delta(after, before, P + "active_backlog", phase="stale_answered") == 0


def test_unreachable_database_reports_up_0_only(caplog):
    collector = ReaperCollector(
        f"host=127.0.0.1 port={closed_port()} dbname=messenger user={MONITOR} password=x",
        connect_timeout=2)
    with caplog.at_level(logging.WARNING, logger="call_reaper_exporter"):
        assert samples_of(collect_once(collector).collect()) == DOWN
        assert samples_of(collect_once(collector).collect()) == DOWN
    # An outage is one warning, not one per scrape.
    assert len(caplog.records) == 1
    assert "OperationalError" in caplog.records[0].getMessage()


def test_slow_database_reports_up_0_after_statement_timeout_then_recovers(
        conn, make_conn, monitor_dsn, reaper_paused, caplog):
    collector = ReaperCollector(monitor_dsn, statement_timeout=1)
    assert sample(collect_once(collector), P + "up") == 1
    holder = make_conn(autocommit=False)
    # Released by the server after 5 s even if the scrape never gives up: a broken statement
    # timeout fails this test instead of hanging it.
    holder.execute("SET idle_in_transaction_session_timeout = '5s'")
    holder.execute("LOCK TABLE messenger.call_reaper_counters IN ACCESS EXCLUSIVE MODE")
    scrapers = exporter_backends(conn)
    scraped = []
    started = time.monotonic()
    scrape = threading.Thread(target=lambda: scraped.append(collect_once(collector)))
    scrape.start()
    # The scrape really waits behind the lock (rather than failing at once for another reason).
    wait_for(lambda: conn.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s) AND wait_event_type = 'Lock'",
        [scrapers]).fetchone()[0] == 1, 5, "the scrape to wait on the counters' lock", interval=0.02)
    scrape.join(10)
    elapsed = time.monotonic() - started
    # Ended by its own statement timeout (QueryCanceled is SQLSTATE 57014), while the holder
    # still had the lock: the holder's 5 s idle timeout would have ended it otherwise.
    holder.execute("SELECT 1")
    holder.close()
    print(f"\nscrape behind a held lock, 1 s statement timeout: up 0 after {elapsed:.2f} s")
    assert samples_of(scraped[0].collect()) == DOWN
    assert "QueryCanceled" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="call_reaper_exporter"):
        assert sample(collect_once(collector), P + "up") == 1
    assert [r.getMessage() for r in caplog.records] == ["database answers again"]
    collector.close()


def test_reconnects_after_losing_its_connection(conn, monitor_dsn):
    collector = ReaperCollector(monitor_dsn)
    others = set(exporter_backends(conn))
    assert sample(collect_once(collector), P + "up") == 1
    [pid] = set(exporter_backends(conn)) - others
    assert conn.execute("SELECT pg_terminate_backend(%s, 5000)", [pid]).fetchone()[0]
    assert sample(collect_once(collector), P + "up") == 0, "the dead connection is noticed"
    assert sample(collect_once(collector), P + "up") == 1, "and replaced on the next scrape"
    [new_pid] = set(exporter_backends(conn)) - others - {pid}
    assert new_pid != pid
    collector.close()
