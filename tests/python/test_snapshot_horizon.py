"""The long-running procedures never hold a snapshot for long: the scheduled ones and the polite
drain.

On pg_cron 1.4, pg_cron's CALLs of messenger.run_call_reaper_warden() (all minute, every minute)
and of messenger.run_call_reaper_ticks() (the minute's ticks) spend most of their time waiting (on
1.5+ each CALL is one check or one cycle; the test checks whatever it samples). A sleeping
statement holds a snapshot, and while a snapshot is older than a closed call's update no scan may
prune that row or mark its index entries dead: every later claim, skipped-locked count and idle
cycle of the reaper (and the product's own scans) walk them. With one-second naps a 100k drain
cost 82 instead of 30 buffers per closed call (docs/design.md, "Scheduling").

The polite drain (drain_call_timeouts(duty_cycle => d)) pauses (1 - d) / d times each cycle's
wall time; in one sleep that held a snapshot over the calls the drain had just closed for as long
as the cycle ran.

Measured without clocks: this test assigns a transaction id about every 50 ms and counts how
many of them each procedure's backend_xmin still treats as in progress, i.e. how many of our
ids were assigned after that backend's oldest snapshot was taken.
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import psycopg
from reaper_support import (
    backend_pid,
    pg_cron_version,
    ringing,
    wait_for,
    warden_is_running,
)

SAMPLE_EVERY = 0.05
SAMPLING = 4.0
# Naps of 0.1 s leave one or two of our ids behind; naps of a second leave about twenty.
MOST_IDS_BEHIND = 8


def ids_behind(conn, query_like: str, seconds: float) -> tuple[int, dict[str, int]]:
    """Assigns a transaction id every SAMPLE_EVERY for `seconds` and returns how many were
    assigned, and per query LIKE `query_like`, the most of them its backend_xmin still saw as
    running."""
    ours: list[int] = []
    worst: dict[str, int] = {}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        # Autocommit: each call is its own transaction, committed at once.
        ours.append(conn.execute("SELECT (txid_current() % 4294967296)::bigint").fetchone()[0])
        rows = conn.execute(
            """SELECT a.query, a.backend_xmin::text::bigint
                 FROM pg_catalog.pg_stat_activity AS a
                WHERE a.query LIKE %s
                  AND a.backend_xmin IS NOT NULL""", (query_like,)
        ).fetchall()
        for query, xmin in rows:
            behind = sum(1 for xid in ours if xid >= xmin)
            worst[query] = max(worst.get(query, 0), behind)
        time.sleep(SAMPLE_EVERY)
    return len(ours), worst


def test_the_scheduled_procedures_hold_no_snapshot_for_long(conn, warden_running):
    sampling_since = conn.execute("SELECT clock_timestamp()").fetchone()[0]
    assigned, worst = ids_behind(conn, "CALL messenger.run_call_reaper_%", SAMPLING)
    print(f"\nsnapshot horizon: {assigned} ids assigned, most still seen as running: {worst}")
    if pg_cron_version(conn) < (1, 5):
        assert any("run_call_reaper_warden" in q for q in worst), (
            "no CALL of the lock warden held a snapshot while sampled: is its pg_cron job running?")
    else:
        # One check a second, milliseconds each: rarely sampled, but it ran meanwhile.
        assert warden_is_running(conn, sampling_since), "the lock warden's job ran while sampled"
    assert assigned >= 20, "too few samples to judge"
    assert max(worst.values(), default=0) <= MOST_IDS_BEHIND, worst


def test_the_polite_drain_holds_no_snapshot_while_it_pauses(conn, dsn, calls, reaper_paused):
    """duty_cycle 0.02 pauses 49 times each cycle's wall time: one sleep per pause would hold a
    snapshot for about a second of every cycle (twenty of our ids and more); naps of 0.1 s, each
    committed, hold one for at most 0.1 s."""
    now = conn.execute("SELECT now()").fetchone()[0]
    calls.add(ringing(now - timedelta(hours=1, seconds=i)) for i in range(4500))
    drain_sql = "CALL messenger.drain_call_timeouts(batch_size => 300, duty_cycle => 0.02)"
    failure: list[BaseException] = []
    with psycopg.connect(dsn, autocommit=True) as drainer:
        pid = backend_pid(drainer)

        def drain() -> None:
            try:
                drainer.execute(drain_sql)
            except psycopg.errors.QueryCanceled:
                pass
            except BaseException as e:  # noqa: BLE001 - reported by the test's thread
                failure.append(e)

        thread = threading.Thread(target=drain)
        thread.start()
        try:
            wait_for(lambda: conn.execute(
                "SELECT count(*) >= 2 FROM messenger.call_reaper_runs WHERE missed_count > 0"
                "   AND started_at >= %s", (now,)).fetchone()[0], 30, "the drain's first two cycles")
            assigned, worst = ids_behind(conn, "CALL messenger.drain_call_timeouts%", SAMPLING)
            closed = conn.execute(
                "SELECT count(*) FROM messenger.call_sessions WHERE call_id = ANY(%s) AND status = 'Missed'",
                (calls.ids,)).fetchone()[0]
        finally:
            conn.execute("SELECT pg_cancel_backend(%s)", (pid,))
            thread.join(30)
    print(f"\npolite drain: {assigned} ids assigned, {closed} calls closed, most still seen as running: {worst}")
    assert not failure, failure
    assert 0 < closed < 4500, "the drain was still pausing between cycles while sampled"
    assert worst, "the drain's backend held no snapshot while sampled: did it run?"
    assert assigned >= 20, "too few samples to judge"
    assert max(worst.values()) <= MOST_IDS_BEHIND, worst
