"""Busy lock: a second caller while a cycle holds the lock returns at once, skipped."""

from datetime import timedelta

from reaper_facts import LOCK_ROW_SQL
from reaper_support import (
    FUTURE,
    backend_pid,
    call_rows,
    lock_is_free,
    reap,
    ringing,
)


def test_second_caller_is_skipped_at_once_and_counted(dsn, calls, make_conn, reaper_paused):
    overdue = calls.add([ringing(FUTURE - timedelta(minutes=i + 1)) for i in range(3)])
    ids = [c["call_id"] for c in overdue]
    holder = make_conn(autocommit=False)
    second = make_conn()
    observer = make_conn()
    # A waiting lock call would hit this instead of returning: "at once" without a stopwatch.
    second.execute("SET statement_timeout = '5s'")

    first = reap(holder, as_of=FUTURE, batch_size=1)
    assert first["lock_acquired"] is True
    assert first["missed_count"] == 1
    held = observer.execute(
        f"SELECT count(*) FROM pg_catalog.pg_locks AS l WHERE l.pid = %s AND l.granted AND {LOCK_ROW_SQL}",
        [backend_pid(holder)],
    ).fetchone()[0]
    assert held == 1, "the holder's cycle holds the documented advisory lock"
    skipped_before = observer.execute(
        "SELECT count(*) FROM messenger.call_reaper_runs WHERE result = 'skipped'"
    ).fetchone()[0]

    busy = reap(second, as_of=FUTURE)

    assert busy["lock_acquired"] is False
    assert busy["result"] == "skipped"
    assert (busy["missed_count"], busy["failed_count"], busy["skipped_locked_count"],
            busy["poisoned_count"]) == (0, 0, 0, 0)
    # The skipped run is in the ledger (committed although the holder is still open).
    ledger = observer.execute(
        "SELECT result, lock_acquired, missed_count + failed_count"
        " FROM messenger.call_reaper_runs WHERE run_id = %s",
        [busy["run_id"]],
    ).fetchone()
    assert ledger == ("skipped", False, 0)
    skipped_after = observer.execute(
        "SELECT count(*) FROM messenger.call_reaper_runs WHERE result = 'skipped'"
    ).fetchone()[0]
    assert skipped_after == skipped_before + 1
    # The busy caller changed no call: the two still Ringing are untouched, the holder's
    # closure is not visible yet.
    assert [r["status"] for r in call_rows(observer, ids).values()] == ["Ringing"] * 3

    holder.commit()
    assert lock_is_free(observer), "the lock ends with the holder's transaction"
    after = reap(second, as_of=FUTURE)
    assert after["lock_acquired"] is True
    assert after["missed_count"] == 2
