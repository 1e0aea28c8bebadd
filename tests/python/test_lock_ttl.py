"""Lock TTL: a DBA who runs a cycle inside BEGIN and then idles cannot hold the lock for
longer than settings.lock_ttl: the reaper sets idle_in_transaction_session_timeout to it for
the rest of that transaction. The TTL is shortened to 2 s here (the default is 1 min)."""

import time
from datetime import timedelta

import pytest
from psycopg import errors
from reaper_support import (
    FUTURE,
    backend_pid,
    call_rows,
    lock_is_free,
    reap,
    ringing,
    wait_for,
)

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
    # SQLSTATE 25P03: the server ended the session for idling, not something else.
    with pytest.raises(errors.IdleInTransactionSessionTimeout):
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
