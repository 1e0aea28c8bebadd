"""Between its polling ticks the scheduled job wakes at the next Ringing call's deadline
(settings.wake_at_deadline, on by default): a Missed call is closed at or just past its deadline,
not by the next tick, up to polling_interval later. The deadline's closure is the lean one
(messenger._reap_deadline: no ledger row; its run id on the outbox row); a call it cannot close
falls back to the full cycle at once, which isolates it and writes the ledger row.

The procedure is CALLed here as pg_cron would, as the job role, in real time (it sleeps), in a
database without pg_cron: once with the job recorded on a schedule in seconds (pg_cron 1.5+: one
tick per CALL, then the deadlines until the next CALL), once on the minute loop (pg_cron 1.4),
and once through the shipped Patroni callback (scripts/patroni-on-role-change), as a new primary
runs it.
What is asserted are events and their order (the closing cycle came after the tick, at or past
the deadline, before the next tick), never a stopwatch time."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import secrets
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from adoption_support import deployed_without_cron
from ha_cluster import CALLBACK
from psycopg import sql
from reaper_facts import JOB_ROLE
from reaper_support import wait_for

DB = "deadline_wake"
RING = dt.timedelta(seconds=45)


@pytest.fixture(scope="module")
def product(dsn: str) -> Iterator[psycopg.Connection]:
    with deployed_without_cron(dsn, DB) as conn:
        yield conn


@pytest.fixture
def db(product: psycopg.Connection) -> Iterator[psycopg.Connection]:
    product.execute("DELETE FROM messenger.realtime_outbox")
    product.execute("DELETE FROM messenger.call_sessions")
    product.execute("DELETE FROM messenger.call_reaper_cron_jobs")
    product.execute("UPDATE messenger.call_reaper_settings SET paused = false, wake_at_deadline = DEFAULT,"
                    " ring_timeout = %s", (RING,))
    yield product
    product.execute("RESET ROLE")


def ringing(conn: psycopg.Connection, deadline_in: float) -> tuple[str, dt.datetime]:
    """A Ringing call whose answer window closes deadline_in seconds from now: (call_id, deadline)."""
    call_id, started = conn.execute(
        "INSERT INTO messenger.call_sessions (call_id, caller_user_id, callee_user_id, media_type, status,"
        " started_at, updated_at)"
        " SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing', t, t"
        " FROM (SELECT clock_timestamp() - %s + %s * interval '1 second' AS t) AS x"
        " RETURNING call_id, started_at", (RING, deadline_in)).fetchone()
    return str(call_id), started + RING


def ticks_as_job(conn: psycopg.Connection, statement_timeout: str | None = None) -> dt.datetime:
    """CALL run_call_reaper_ticks() as the job role; when it started."""
    since = conn.execute("SELECT clock_timestamp()").fetchone()[0]
    conn.execute(f"SET ROLE {JOB_ROLE}")
    if statement_timeout:
        conn.execute("SELECT set_config('statement_timeout', %s, false)", (statement_timeout,))
    conn.execute("CALL messenger.run_call_reaper_ticks()")
    conn.execute("RESET statement_timeout")
    conn.execute("RESET ROLE")
    return since


def runs_since(conn: psycopg.Connection, since: dt.datetime) -> list[tuple[dt.datetime, int]]:
    return conn.execute("SELECT as_of, missed_count FROM messenger.call_reaper_runs"
                        " WHERE started_at >= %s ORDER BY started_at", (since,)).fetchall()


def idle_cycles(conn: psycopg.Connection) -> int:
    """Cycles on the clock that closed nothing: counted, not written to the ledger."""
    return conn.execute("SELECT idle_cycles FROM messenger.call_reaper_metrics()").fetchone()[0]


def closed_at(conn: psycopg.Connection, call_id: str) -> tuple[str, dt.datetime | None]:
    return conn.execute("SELECT status, ended_at FROM messenger.call_sessions WHERE call_id = %s",
                        (call_id,)).fetchone()


def closed_by_deadline_closure(conn: psycopg.Connection, call_id: str) -> bool:
    """Its one CallMissed row carries a run id that has no ledger row: the lean closure's."""
    return conn.execute("SELECT count(*) = 1 AND bool_and(NOT EXISTS (SELECT FROM messenger.call_reaper_runs AS r"
                        "  WHERE r.run_id = o.correlation_id))"
                        " FROM messenger.realtime_outbox AS o WHERE o.reference_id = %s AND o.kind = 'CallMissed'",
                        (call_id,)).fetchone()[0]


def before_second_45(conn: psycopg.Connection) -> None:
    """Waits, if need be, for a minute's first 45 s: a test's tick and deadlines then fall in one minute."""
    wait_for(lambda: conn.execute("SELECT extract(second FROM clock_timestamp()) <= 45").fetchone()[0], 20,
             "second 45 of a minute past", interval=0.5)


def record_seconds_schedule(conn: psycopg.Connection, seconds: int) -> None:
    """The job recorded as cron/call_reaper records a pg_cron 1.5+ job: one tick per CALL."""
    conn.execute("UPDATE messenger.call_reaper_settings SET polling_interval = %s",
                 (dt.timedelta(seconds=seconds),))
    conn.execute(
        "INSERT INTO messenger.call_reaper_cron_jobs (kind, jobname, cron_database, schedule, cron_version)"
        " VALUES ('reaper', 'messenger-call-timeout-reaper', 'postgres', %s, '1.6.7')", (f"{seconds} seconds",))


def test_on_a_schedule_in_seconds_a_call_is_closed_at_its_deadline_not_at_the_next_tick(db):
    record_seconds_schedule(db, 5)
    call_id, deadline = ringing(db, 1.5)
    idle = idle_cycles(db)
    since = ticks_as_job(db)
    runs = runs_since(db, since)
    status, ended = closed_at(db, call_id)
    next_tick = since + dt.timedelta(seconds=5)
    # The tick at the start closed nothing (counted idle, no ledger row); the closure that woke at
    # the deadline closed the call, and left no ledger row either.
    assert idle_cycles(db) == idle + 1 and runs == [], runs
    assert status == "Missed" and closed_by_deadline_closure(db, call_id)
    assert deadline <= ended < next_tick, (deadline, ended, next_tick)
    # The CALL stayed for deadlines until the next one is due, not past it.
    assert db.execute("SELECT clock_timestamp()").fetchone()[0] < next_tick + dt.timedelta(seconds=1)


def test_with_wake_at_deadline_off_the_call_waits_for_the_next_tick(db):
    record_seconds_schedule(db, 5)
    db.execute("UPDATE messenger.call_reaper_settings SET wake_at_deadline = false")
    call_id, deadline = ringing(db, 1.5)
    idle = idle_cycles(db)
    since = ticks_as_job(db)
    # One idle tick, then the CALL returns (its job slot back at once): the call still rings.
    assert idle_cycles(db) == idle + 1 and runs_since(db, since) == []
    assert db.execute("SELECT clock_timestamp()").fetchone()[0] < deadline
    assert closed_at(db, call_id) == ("Ringing", None)


def test_on_the_minute_loop_a_call_is_closed_at_its_deadline_between_ticks(db):
    # One tick a minute (at :00, run at once by this CALL as the minute's first), deadlines between.
    db.execute("UPDATE messenger.call_reaper_settings SET polling_interval = '60 seconds'")
    before_second_45(db)
    call_id, deadline = ringing(db, 1.5)
    idle = idle_cycles(db)
    # A budget of 10 s: the CALL waits for deadlines while 5 s of it are left, then returns
    # instead of being cancelled.
    since = ticks_as_job(db, statement_timeout="10s")
    runs = runs_since(db, since)
    status, ended = closed_at(db, call_id)
    # The minute's tick closed nothing (counted idle); the deadline's closure closed the call.
    assert idle_cycles(db) == idle + 1 and runs == [], runs
    assert status == "Missed" and closed_by_deadline_closure(db, call_id) and deadline <= ended, (deadline, ended)
    assert db.execute("SELECT clock_timestamp()").fetchone()[0] < since + dt.timedelta(seconds=10)


def test_a_call_committed_late_with_an_old_started_at_is_left_to_the_next_tick(db, make_conn):
    # Its deadline had passed when the tick's cycle ran (no deadline wakes the job for it): the
    # next tick closes it, as the polling cadence always did.
    record_seconds_schedule(db, 5)
    late = make_conn(dbname=DB)
    with late.transaction():
        late_id, _ = ringing(late, -10.0)
        call_id, _ = ringing(db, 1.5)
        ticks_as_job(db)
    assert closed_at(db, call_id)[0] == "Missed"
    assert closed_at(db, late_id) == ("Ringing", None)
    ticks_as_job(db)
    assert closed_at(db, late_id)[0] == "Missed"


def test_a_call_the_closure_cannot_close_falls_back_to_the_full_cycle_at_once(db):
    # A product trigger refuses one of two calls due at the same deadline: the closure's one
    # statement fails whole, and the full cycle runs at once: it closes the healthy call and
    # quarantines the other, in one ledger row, before the next tick.
    record_seconds_schedule(db, 5)
    poison, _ = ringing(db, 1.5)
    healthy, deadline = ringing(db, 1.5)
    db.execute("CREATE FUNCTION public.refuse_one() RETURNS trigger LANGUAGE plpgsql AS"
               f" $$BEGIN IF NEW.call_id = '{poison}' THEN RAISE EXCEPTION 'refused'; END IF; RETURN NEW; END$$")
    db.execute("CREATE TRIGGER refuse_one BEFORE UPDATE ON messenger.call_sessions"
               " FOR EACH ROW EXECUTE FUNCTION public.refuse_one()")
    try:
        since = ticks_as_job(db)
    finally:
        db.execute("DROP TRIGGER refuse_one ON messenger.call_sessions")
        db.execute("DROP FUNCTION public.refuse_one()")
    runs = db.execute("SELECT as_of, missed_count, poisoned_count FROM messenger.call_reaper_runs"
                      " WHERE started_at >= %s", (since,)).fetchall()
    status, ended = closed_at(db, healthy)
    assert [r[1:] for r in runs] == [(1, 1)], runs
    assert status == "Missed" and ended == runs[0][0] and deadline <= ended < since + dt.timedelta(seconds=5)
    assert closed_at(db, poison) == ("Ringing", None)
    assert db.execute("SELECT count(*) FROM messenger.call_reaper_quarantine WHERE call_id = %s",
                      (poison,)).fetchone()[0] == 1
    db.execute("DELETE FROM messenger.call_reaper_quarantine")


def test_a_call_held_at_its_deadline_is_skipped_by_the_closure_and_closed_by_the_next_tick(db, make_conn):
    # answer-call holds the row at the deadline: the closure passes it (SKIP LOCKED) and never
    # waits; once released, the next tick's fresh lane closes it.
    record_seconds_schedule(db, 5)
    held, _ = ringing(db, 1.0)
    other, _ = ringing(db, 1.0)
    holder = make_conn(dbname=DB)
    with holder.transaction():
        holder.execute("SELECT 1 FROM messenger.call_sessions WHERE call_id = %s FOR NO KEY UPDATE", (held,))
        ticks_as_job(db)
        assert closed_at(db, held) == ("Ringing", None)
        assert closed_at(db, other)[0] == "Missed" and closed_by_deadline_closure(db, other)
    ticks_as_job(db)
    assert closed_at(db, held)[0] == "Missed"


def test_while_another_session_holds_the_lock_no_deadline_cycle_adds_a_skipped_run(db, make_conn):
    # A DBA's drain holds the single-runner lock: the tick's cycle is skipped, and the CALL
    # waits for the next tick instead of a skipped run per deadline (the holder closes them).
    record_seconds_schedule(db, 5)
    holder = make_conn(dbname=DB)
    holder.execute("SELECT pg_advisory_lock(messenger.call_reaper_lock_key())")
    call_id, _ = ringing(db, 1.0)
    since = ticks_as_job(db)
    results = [r[0] for r in db.execute("SELECT result FROM messenger.call_reaper_runs WHERE started_at >= %s",
                                        (since,)).fetchall()]
    assert results == ["skipped"]
    assert closed_at(db, call_id) == ("Ringing", None)
    holder.execute("SELECT pg_advisory_unlock(messenger.call_reaper_lock_key())")


def test_the_patroni_callbacks_run_closes_a_call_at_its_deadline(db, tmp_path: Path):
    # The shipped on_role_change callback on a node that just became the primary: its detached
    # run CALLs the tick procedure, whose first cycle is the minute's tick; a call that falls due
    # seconds later is closed by that run's deadline cycle, not left for the minute after.
    db.execute("UPDATE messenger.call_reaper_settings SET polling_interval = '60 seconds'")
    before_second_45(db)
    password = secrets.token_urlsafe(24)
    db.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(sql.Identifier(JOB_ROLE), sql.Literal(password)))
    pgpass = tmp_path / "pgpass"
    pgpass.write_text(f"*:*:{DB}:{JOB_ROLE}:{password}\n")
    pgpass.chmod(0o600)
    env = {k: v for k, v in os.environ.items() if k not in ("PGPASSWORD", "DATABASE_URL")}
    env["PGPASSFILE"] = str(pgpass)
    host = db.info.host if not db.info.host.startswith("/") else "localhost"  # password auth
    try:
        idle = idle_cycles(db)
        since = db.execute("SELECT clock_timestamp()").fetchone()[0]
        call_id, deadline = ringing(db, 5.0)  # the callback reaches its first cycle well before
        with open(tmp_path / "callback.log", "ab") as log:
            rc = subprocess.run([str(CALLBACK), "--host", host, "--port", str(db.info.port), "--dbname", DB,
                                 "--user", JOB_ROLE, "--wait", "10", "--limit", "40",
                                 "on_role_change", "primary", "scope"],
                                env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                check=False, timeout=30).returncode
        assert rc == 0
        wait_for(lambda: closed_at(db, call_id)[0] != "Ringing", 20, "the callback's run to close the call",
                 interval=0.2)
        runs = runs_since(db, since)
        status, ended = closed_at(db, call_id)
        running = db.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'patroni-on-role-change'"
                             " AND query = 'CALL messenger.run_call_reaper_ticks()'").fetchone()[0]
    finally:
        # Paused, the run's CALL returns at its next nap (a cleanup: a run still there is not this test's failure).
        db.execute("SELECT messenger.pause_call_reaper()")
        with contextlib.suppress(AssertionError):
            wait_for(lambda: not db.execute("SELECT count(*) FROM pg_stat_activity"
                                            " WHERE application_name = 'patroni-on-role-change'").fetchone()[0],
                     10, "the callback's run to end", interval=0.2)
        db.execute(sql.SQL("ALTER ROLE {} PASSWORD NULL").format(sql.Identifier(JOB_ROLE)))
    log_text = (tmp_path / "callback.log").read_text()
    # Nothing else runs cycles in this database (no pg_cron): the callback's run ticked first
    # (idle, counted) and was still running its minute when the deadline's cycle closed the call.
    assert "event=detached" in log_text and running == 1, log_text
    assert idle_cycles(db) >= idle + 1 and runs == [], runs
    assert status == "Missed" and closed_by_deadline_closure(db, call_id) and deadline <= ended, (deadline, ended)
    assert ended < since.replace(second=0, microsecond=0) + dt.timedelta(minutes=1)


def call_in_background(conn: psycopg.Connection) -> tuple[threading.Thread, dict]:
    """ticks_as_job(conn) in a thread; the dict gets its end time, any error and the reaper's records."""
    out: dict = {"records": []}
    conn.add_notice_handler(lambda d: out["records"].append(d.message_primary))
    conn.execute("SET client_min_messages = log")

    def run() -> None:
        try:
            ticks_as_job(conn)
        except psycopg.Error as e:
            out["error"] = e
        out["ended"] = dt.datetime.now(dt.UTC)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


@pytest.mark.parametrize("change", ["replace the procedure", "revoke wake_at_deadline"])
def test_a_running_call_goes_on_cleanly_when_a_deploy_changes_what_it_runs(db, make_conn, change):
    # A deploy replaces the procedure beneath the job's running CALL, or takes a grant it reads
    # away: the CALL fails nothing. Replaced, it hands the rest of its schedule over to the new
    # definition (a nested CALL), which closes the call at its deadline; without its read of
    # wake_at_deadline it ticks on without the wake (on a schedule in seconds, its one tick is
    # done: it returns), saying so once.
    record_seconds_schedule(db, 5)
    runner = make_conn(dbname=DB)
    call_id, deadline = ringing(db, 3.0)
    thread, out = call_in_background(runner)
    # Its first tick done: this CALL (not another one still running) has read its own version.
    wait_for(lambda: any("event=cycle_completed" in r for r in out["records"]), 5, "the CALL's first tick",
             interval=0.05)
    if change == "replace the procedure":
        db.execute(db.execute("SELECT pg_get_functiondef('messenger.run_call_reaper_ticks(timestamptz)'::regprocedure)")
                   .fetchone()[0])
    else:
        db.execute(f"REVOKE SELECT (wake_at_deadline) ON messenger.call_reaper_settings FROM {JOB_ROLE}")
    changed = dt.datetime.now(dt.UTC)
    try:
        thread.join(15)
    finally:
        db.execute(f"GRANT SELECT (wake_at_deadline) ON messenger.call_reaper_settings TO {JOB_ROLE}")
    assert not thread.is_alive() and "error" not in out, out
    events = [r.split()[1] for r in out["records"] if r.startswith("call_reaper event=ticks_") or "event=wake_off" in r]
    if change == "replace the procedure":
        assert events == ["event=ticks_handed_over"], out["records"]
        status, ended = closed_at(db, call_id)
        assert status == "Missed" and deadline <= ended <= out["ended"]
    else:
        assert events == ["event=wake_off"], out["records"]
        assert out["ended"] - changed < dt.timedelta(seconds=1), out["ended"] - changed
        assert closed_at(db, call_id) == ("Ringing", None)
