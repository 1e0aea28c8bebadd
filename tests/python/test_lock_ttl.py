"""Lock TTL: no transaction keeps the single-runner lock past settings.lock_ttl (+ the
warden's one-second check), busy or idle, superuser or not, and no scheduled cycle runs past
the 30 s max run duration -- including the first tick of a pg_cron 1.4 minute, whose CALL has a
90 s statement_timeout. Two mechanisms: the reaper sets idle_in_transaction_session_timeout to
the TTL for the rest of its transaction (an idle holder expires by itself), and the deployer's
pg_cron job messenger-call-reaper-warden ends any holder past its bound, logging and recording
it in messenger.call_reaper_lock_takeovers. The TTL is shortened to 2 s here (default 1 min)."""

import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from conftest import set_reaper_job_active
from psycopg import errors
from reaper_facts import JOB_ROLE, LOCK_ROW_SQL
from reaper_support import (
    FUTURE,
    backend_pid,
    call_rows,
    lock_is_free,
    pg_cron_version,
    reap,
    ringing,
    takeovers,
    wait_for,
    waiting_on,
)

MAX_RUN_S = 30
# The warden checks once a second (pg_cron 1.4: a CALL a minute that loops; 1.5+: a run a second).
WARDEN_S = 1

TTL_S = 2


@pytest.fixture
def short_ttl(conn):
    old = conn.execute("SELECT lock_ttl FROM messenger.call_reaper_settings").fetchone()[0]
    conn.execute("UPDATE messenger.call_reaper_settings SET lock_ttl = %s",
                 [timedelta(seconds=TTL_S)])
    yield
    conn.execute("UPDATE messenger.call_reaper_settings SET lock_ttl = %s", [old])


def test_idle_dba_transaction_loses_the_lock_after_the_ttl(calls, make_conn, short_ttl,
                                                           reaper_paused):
    (call,) = calls.add([ringing(FUTURE - timedelta(minutes=1))])
    dba = make_conn(autocommit=False)
    observer = make_conn()
    # The DBA's own session has no idle timeout at all: the reaper must set one.
    dba.execute("SET idle_in_transaction_session_timeout = 0")
    dba.commit()
    pid = backend_pid(dba)

    result = reap(dba, as_of=FUTURE)
    assert result["lock_acquired"] is True and result["missed_count"] == 1
    assert dba.execute("SHOW idle_in_transaction_session_timeout").fetchone()[0] == f"{TTL_S}s"
    idle_since = time.monotonic()
    assert not lock_is_free(observer), "the DBA's open transaction holds the lock"

    wait_for(lambda: lock_is_free(observer), 30 * TTL_S, "the idle DBA transaction to lose the lock",
             interval=0.1)
    held_for = time.monotonic() - idle_since
    # The server ended the session: for idling (25P03) or by the warden (57P01), whichever came
    # first -- the warden counts from the transaction's start, the idle timeout from its last
    # statement. Either way nothing else (not the client) closed it.
    with pytest.raises((errors.IdleInTransactionSessionTimeout, errors.AdminShutdown)):
        dba.execute("SELECT 1")
    assert not observer.execute(
        "SELECT EXISTS (SELECT FROM pg_catalog.pg_stat_activity WHERE pid = %s)", [pid]
    ).fetchone()[0]
    # Its uncommitted closure went with it.
    assert call_rows(observer, [call["call_id"]])[call["call_id"]]["status"] == "Ringing"
    # Generous slack for a loaded machine; the default 1 min TTL would blow it.
    assert held_for < TTL_S + 10


def test_ttl_applies_to_that_transaction_only(make_conn, short_ttl, reaper_paused):
    dba = make_conn(autocommit=False)
    dba.execute("SET idle_in_transaction_session_timeout = 0")
    dba.commit()
    reap(dba, as_of=FUTURE)
    dba.commit()
    assert dba.execute("SHOW idle_in_transaction_session_timeout").fetchone()[0] == "0"
    dba.rollback()


def holder_of_the_lock(conn):
    """(pid, role, seconds since the holder's transaction started, seconds since its statement
    started) of the backend holding the reaper's lock, or None."""
    return conn.execute(
        "SELECT l.pid, a.usename, extract(epoch FROM clock_timestamp() - a.xact_start)::float,"
        "       extract(epoch FROM a.xact_start - a.query_start)::float"
        "  FROM pg_catalog.pg_locks l JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid"
        f" WHERE l.granted AND {LOCK_ROW_SQL}").fetchone()


def test_busy_superuser_transaction_is_ended_after_the_ttl(calls, make_conn, short_ttl,
                                                          reaper_paused, warden_running):
    """Issue 10, reproduction 3: BEGIN; SELECT reap...; SELECT pg_sleep(300) run by hand (here
    as the superuser the tests connect as) used to keep the lock for as long as it liked."""
    (call,) = calls.add([ringing(FUTURE - timedelta(minutes=1))])
    dba = make_conn(autocommit=False)
    observer = make_conn()
    pid = backend_pid(dba)
    assert observer.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()[0]

    assert reap(dba, as_of=FUTURE)["missed_count"] == 1
    ended = []

    def sleep_for_five_minutes():
        try:
            dba.execute("SELECT pg_sleep(300)")
        except Exception as exc:  # noqa: BLE001 - what ended it is asserted below
            ended.append(exc)

    sleeper = threading.Thread(target=sleep_for_five_minutes)
    sleeper.start()
    wait_for(lambda: waiting_on(observer, pid, "PgSleep"), 10, "the DBA session to be busy sleeping")
    busy_since = time.monotonic()
    assert not lock_is_free(observer), "the busy DBA transaction holds the lock"

    wait_for(lambda: lock_is_free(observer), 30 * TTL_S, "the busy transaction to lose the lock",
             interval=0.1)
    held_busy = time.monotonic() - busy_since
    sleeper.join(10)
    assert ended and isinstance(ended[0], errors.AdminShutdown), ended
    # The warden records it when its check commits, just after the backend is gone.
    wait_for(lambda: takeovers(observer, pid), 10, "the warden to record the takeover")
    ((action, reason, role, held_for, signalled),) = takeovers(observer, pid)
    assert (action, reason, signalled) == ("terminated", "lock_ttl", True)
    assert role == observer.execute("SELECT current_user").fetchone()[0], "a superuser's backend"
    # Counted from the transaction's start: never later than TTL + one warden check (+ load).
    assert TTL_S <= held_for < TTL_S + WARDEN_S + 2
    assert held_busy < TTL_S + WARDEN_S + 10
    assert call_rows(observer, [call["call_id"]])[call["call_id"]]["status"] == "Ringing"


def test_a_stuck_scheduled_cycle_is_cancelled_after_the_max_run(dsn, calls, make_conn,
                                                               reaper_paused, warden_running):
    """A scheduled cycle that cannot finish (here: blocked on the outbox by another session)
    is cancelled after 30 s, not after the 90 s of pg_cron 1.4's CALL: on 1.4 this is the first
    tick of the minute; on 1.5+ the job role's own statement_timeout may win the race."""
    control = make_conn()
    observer = make_conn()
    blocker = make_conn(autocommit=False)
    # An overdue call the scheduled cycle will claim, then wait to write its outbox row.
    calls.add([ringing(datetime.now(UTC) - timedelta(hours=1))])
    blocker.execute("LOCK TABLE messenger.realtime_outbox IN SHARE MODE")
    try:
        set_reaper_job_active(control, True)
        holder = None

        def scheduled_holder():
            nonlocal holder
            holder = holder_of_the_lock(observer)
            return holder is not None and holder[1] == JOB_ROLE

        # pg_cron 1.4 starts the job's CALL at the next minute boundary.
        wait_for(scheduled_holder, 75, "a scheduled cycle to take the lock and get stuck", interval=0.2)
        seen_at = time.monotonic()
        pid, _, age_when_seen, cycle_start_in_call = holder
        if pg_cron_version(observer) < (1, 5):
            assert cycle_start_in_call < 15, "on pg_cron 1.4 the stuck cycle is the CALL's first tick"
        wait_for(lambda: holder_of_the_lock(observer) is None
                 or holder_of_the_lock(observer)[0] != pid, 90, "the stuck cycle to lose the lock",
                 interval=0.2)
        held = age_when_seen + time.monotonic() - seen_at
        if pg_cron_version(observer) < (1, 5):
            wait_for(lambda: takeovers(observer, pid), 10, "the warden to record the cancel")
    finally:
        set_reaper_job_active(control, False)
        blocker.rollback()
    assert held < MAX_RUN_S + WARDEN_S + 8, f"the stuck cycle held the lock {held:.1f} s"
    rows = takeovers(observer, pid)
    if pg_cron_version(observer) < (1, 5):
        # The first action is the cancel (a second check may see it before its rollback ends).
        action, reason, role, held_for, signalled = rows[0]
        assert (action, reason, role, signalled) == ("cancelled", "max_run", JOB_ROLE, True)
        assert MAX_RUN_S <= held_for < MAX_RUN_S + WARDEN_S + 2
