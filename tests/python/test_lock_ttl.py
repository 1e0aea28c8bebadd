"""Lock TTL: no transaction keeps the single-runner lock past settings.lock_ttl (+ the
warden's one-second check), busy or idle, superuser or not, and no scheduled cycle runs past
the 30 s max run duration -- including the first tick of a pg_cron 1.4 minute, whose CALL has a
90 s statement_timeout. Two mechanisms: the reaper sets idle_in_transaction_session_timeout to
the TTL for the rest of its transaction (an idle holder expires by itself), and the deployer's
pg_cron job messenger-call-reaper-warden ends any holder past its bound, logging and recording
it in messenger.call_reaper_lock_takeovers. The TTL is shortened to 2 s here (default 1 min)."""

import threading
from datetime import UTC, datetime, timedelta

import pytest
from conftest import set_reaper_job_active
from psycopg import errors
from reaper_facts import JOB_ROLE, LOCK_ROW_SQL
from reaper_support import (
    FUTURE,
    backend_pid,
    call_rows,
    lock_granted_within,
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
# What a loaded 2-core machine adds to a bound before the holder is gone (the old stopwatch
# slack). An observer waits for the lock under lock_timeout = bound + SLACK_S: the server raises
# 55P03 when the holder outlives it, so the default 1 min TTL or a warden that never acts fails.
SLACK_S = 8

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
    assert not lock_is_free(observer), "the DBA's open transaction holds the lock"

    waited = lock_granted_within(observer, TTL_S + WARDEN_S + SLACK_S,
                                 "the idle DBA transaction kept the lock")
    print(f"\nidle DBA transaction: the lock was free {waited:.1f} s after its last statement"
          f" (lock_ttl {TTL_S} s)")
    # The server ended the session: for idling (25P03) or by the warden (57P01), whichever came
    # first -- the warden counts from the transaction's start, the idle timeout from its last
    # statement. Either way nothing else (not the client) closed it.
    with pytest.raises((errors.IdleInTransactionSessionTimeout, errors.AdminShutdown)) as ended:
        dba.execute("SELECT 1")
    if isinstance(ended.value, errors.AdminShutdown):
        wait_for(lambda: takeovers(observer, pid), 10, "the warden to record the takeover")
        ((action, reason, _, held_for, _),) = takeovers(observer, pid)
        assert (action, reason) == ("terminated", "lock_ttl") and held_for >= TTL_S
    assert not observer.execute(
        "SELECT EXISTS (SELECT FROM pg_catalog.pg_stat_activity WHERE pid = %s)", [pid]
    ).fetchone()[0]
    # Its uncommitted closure went with it.
    assert call_rows(observer, [call["call_id"]])[call["call_id"]]["status"] == "Ringing"


def test_ttl_applies_to_that_transaction_only(make_conn, short_ttl, reaper_paused):
    dba = make_conn(autocommit=False)
    observer = make_conn()
    dba.execute("SET idle_in_transaction_session_timeout = 0")
    dba.commit()
    pid = backend_pid(dba)
    assert reap(dba, as_of=FUTURE)["lock_acquired"] is True
    # Inside the cycle's transaction: the lock is this backend's and the timeout is the TTL.
    assert observer.execute(
        "SELECT count(*) FROM pg_catalog.pg_locks l"
        f" WHERE l.granted AND l.pid = %s AND {LOCK_ROW_SQL}", [pid]).fetchone()[0] == 1
    assert dba.execute(
        "SELECT current_setting('idle_in_transaction_session_timeout')").fetchone()[0] == f"{TTL_S}s"
    dba.commit()
    # After it: the lock is released and the session's own setting is back.
    assert lock_is_free(observer)
    assert dba.execute(
        "SELECT current_setting('idle_in_transaction_session_timeout')").fetchone()[0] == "0"
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
    assert not lock_is_free(observer), "the busy DBA transaction holds the lock"

    waited = lock_granted_within(observer, TTL_S + WARDEN_S + SLACK_S,
                                 "the busy DBA transaction kept the lock")
    sleeper.join(10)
    assert ended and isinstance(ended[0], errors.AdminShutdown), ended
    # The warden records it when its check commits, just after the backend is gone.
    wait_for(lambda: takeovers(observer, pid), 10, "the warden to record the takeover")
    ((action, reason, role, held_for, signalled),) = takeovers(observer, pid)
    assert (action, reason, signalled) == ("terminated", "lock_ttl", True)
    assert role == observer.execute("SELECT current_user").fetchone()[0], "a superuser's backend"
    # Counted from the transaction's start: never before the TTL (the upper bound is the
    # lock_timeout above). The figures are printed, not asserted.
    print(f"\nbusy superuser transaction: terminated after {held_for:.2f} s (lock_ttl {TTL_S} s),"
          f" lock free {waited:.1f} s after it was seen sleeping")
    assert held_for >= TTL_S
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
        pid, _, age_when_seen, cycle_start_in_call = holder
        if pg_cron_version(observer) < (1, 5):
            assert cycle_start_in_call < 15, "on pg_cron 1.4 the stuck cycle is the CALL's first tick"
        # Queued behind the stuck cycle, the observer is granted the lock before the job's next
        # tick can take it again (a waiter blocks later requests), so the lock_timeout bounds
        # the stuck cycle alone: the max run from its transaction's start, one warden check,
        # the load's slack. A 90 s CALL timeout raises 55P03 here.
        waited = lock_granted_within(
            observer, MAX_RUN_S + WARDEN_S + SLACK_S - age_when_seen, "the stuck scheduled cycle kept the lock")
        print(f"\nstuck scheduled cycle: lock free {age_when_seen + waited:.1f} s after its"
              f" transaction started (max run {MAX_RUN_S} s)")
        if pg_cron_version(observer) < (1, 5):
            wait_for(lambda: takeovers(observer, pid), 10, "the warden to record the cancel")
    finally:
        set_reaper_job_active(control, False)
        blocker.rollback()
    rows = takeovers(observer, pid)
    if pg_cron_version(observer) < (1, 5):
        # The first action is the cancel (a second check may see it before its rollback ends).
        action, reason, role, held_for, signalled = rows[0]
        assert (action, reason, role, signalled) == ("cancelled", "max_run", JOB_ROLE, True)
        print(f"the warden cancelled it after {held_for:.2f} s")
        assert held_for >= MAX_RUN_S
