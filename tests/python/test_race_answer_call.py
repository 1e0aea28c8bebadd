"""Race with answer-call / end-call: a locked call is skipped, not waited for, not overwritten.

The product's commands are played by a second connection holding an open transaction. The
reaper runs in a thread; the test watches pg_stat_activity to see whether it ever waits on
a row lock (a reaper that waited would sit in wait_event_type 'Lock' until the product
commits), so "not waited for" needs no stopwatch.
"""

import threading
from datetime import timedelta

import psycopg
import pytest
from reaper_support import (
    FUTURE,
    STALE,
    answered,
    backend_pid,
    call_rows,
    outbox_rows,
    reap,
    ringing,
)

AS_OF = FUTURE


def run_reaper_beside(make_conn, product, **args):
    """Runs one cycle in a thread while `product` holds its transaction open.

    Returns (result, waited): waited is True when the cycle blocked on a lock; then the
    product is committed to let it finish, as a real answer-call would.
    """
    reaper_conn = make_conn()
    observer = make_conn()
    pid = backend_pid(reaper_conn)
    out = {}

    def cycle():
        try:
            out["result"] = reap(reaper_conn, **args)
        except psycopg.Error as exc:  # re-raised in the test's thread below
            out["error"] = exc

    thread = threading.Thread(target=cycle)
    thread.start()
    waited = False
    while thread.is_alive():
        row = observer.execute(
            "SELECT wait_event_type FROM pg_catalog.pg_stat_activity WHERE pid = %s", [pid]
        ).fetchone()
        if row and row[0] == "Lock":
            waited = True
            product.commit()
            break
        thread.join(0.02)
    thread.join()
    if "error" in out:
        raise out["error"]
    return out["result"], waited


def test_ringing_call_held_by_answer_call_is_skipped_and_stays_answered(calls, make_conn,
                                                                        reaper_paused):
    held, free = calls.add([ringing(AS_OF - timedelta(minutes=2)),
                            ringing(AS_OF - timedelta(minutes=1))])
    product = make_conn(autocommit=False)
    # answer-call: the product's own guarded transition, not yet committed.
    answered_at = AS_OF - timedelta(seconds=1)
    product.execute(
        "UPDATE messenger.call_sessions SET status = 'Answered', answered_at = %s, updated_at = %s"
        " WHERE call_id = %s AND status = 'Ringing'",
        [answered_at, answered_at, held["call_id"]],
    )

    result, waited = run_reaper_beside(make_conn, product, as_of=AS_OF)

    assert not waited, "the reaper waited for the row answer-call holds"
    assert result["lock_acquired"] is True
    assert result["skipped_locked_count"] == 1
    assert result["missed_count"] == 1
    product.commit()

    again = reap(make_conn(), as_of=AS_OF)
    assert again["missed_count"] == 0 and again["skipped_locked_count"] == 0
    rows = call_rows(make_conn(), [held["call_id"], free["call_id"]])
    assert rows[held["call_id"]]["status"] == "Answered"
    assert rows[held["call_id"]]["answered_at"] == answered_at
    assert rows[held["call_id"]]["ended_at"] is None
    assert rows[free["call_id"]]["status"] == "Missed"
    assert [r["reference_id"] for r in outbox_rows(make_conn(), [held["call_id"]])] == []


def test_answered_call_held_by_end_call_is_skipped_and_stays_ended(calls, make_conn,
                                                                   reaper_paused):
    (held,) = calls.add([answered(AS_OF - STALE - timedelta(minutes=1))])
    product = make_conn(autocommit=False)
    product.execute(
        "UPDATE messenger.call_sessions SET status = 'Ended', end_reason = 'Hangup',"
        " ended_at = %s, updated_at = %s, duration_seconds = 7"
        " WHERE call_id = %s AND status = 'Answered'",
        [AS_OF, AS_OF, held["call_id"]],
    )

    result, waited = run_reaper_beside(make_conn, product, as_of=AS_OF)

    assert not waited, "the reaper waited for the row end-call holds"
    assert (result["failed_count"], result["skipped_locked_count"]) == (0, 1)
    product.commit()
    again = reap(make_conn(), as_of=AS_OF + timedelta(hours=3))
    assert again["failed_count"] == 0
    row = call_rows(make_conn(), [held["call_id"]])[held["call_id"]]
    assert (row["status"], row["end_reason"], row["duration_seconds"]) == ("Ended", "Hangup", 7)
    assert outbox_rows(make_conn(), [held["call_id"]]) == []


@pytest.fixture
def child_table(conn):
    """A product table with a foreign key to calls (like call participants or events).

    Requested before make_conn, so the product's connection is closed before the drop.
    """
    conn.execute("CREATE SCHEMA reaper_race_test")
    # The key of call_sessions is call_id, or (call_id, started_at) where the service partitioned
    # it (the stand-in's partitioned variant): reference whichever it is.
    key = conn.execute(
        "SELECT string_agg(a.attname, ', ' ORDER BY array_position(i.indkey, a.attnum))"
        "  FROM pg_index AS i JOIN pg_attribute AS a"
        "    ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)"
        " WHERE i.indrelid = 'messenger.call_sessions'::regclass AND i.indisprimary").fetchone()[0]
    conn.execute(
        "CREATE TABLE reaper_race_test.call_event ("
        " call_id uuid NOT NULL, note text, started_at timestamptz NOT NULL,"
        f" FOREIGN KEY ({key}) REFERENCES messenger.call_sessions ({key}) ON DELETE CASCADE)"
    )
    yield "reaper_race_test.call_event"
    conn.execute("DROP SCHEMA reaper_race_test CASCADE")


@pytest.mark.parametrize("phase", ["ring_timeout", "stale_answered"])
def test_child_insert_holding_key_share_does_not_hide_the_call(phase, child_table, calls,
                                                               make_conn, reaper_paused):
    spec = (ringing(AS_OF - timedelta(minutes=1)) if phase == "ring_timeout"
            else answered(AS_OF - STALE - timedelta(minutes=1)))
    (call,) = calls.add([spec])
    product = make_conn(autocommit=False)
    # The FK check takes FOR KEY SHARE on the call row until this transaction ends.
    product.execute(f"INSERT INTO {child_table} SELECT c.call_id, 'typing', c.started_at"
                    " FROM messenger.call_sessions AS c WHERE c.call_id = %s", [call["call_id"]])

    result, waited = run_reaper_beside(make_conn, product, as_of=AS_OF)

    assert not waited
    assert result["skipped_locked_count"] == 0
    assert result["missed_count" if phase == "ring_timeout" else "failed_count"] == 1
    product.commit()
    status = call_rows(make_conn(), [call["call_id"]])[call["call_id"]]["status"]
    assert status == ("Missed" if phase == "ring_timeout" else "Failed")
