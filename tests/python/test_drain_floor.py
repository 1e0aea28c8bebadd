"""A drain's claim floor never passes a call the product holds.

During a drain each full backlog lane moves the phase's claim floor, so the next cycle starts
where this one stopped. A call passed because answer-call or end-call held its row must stay
above the floor: it is walked (and counted in skipped_locked) by every cycle while it is held,
and claimed by the first cycle after it is released, while the drain goes on. At scale: a 100k
drain by messenger.drain_call_timeouts beside a product that keeps holding (and sometimes
ending) calls where the floor is closes every call once. Needs connections holding rows, hence
pytest.
"""

import random
import threading
import time
from datetime import timedelta

import pytest
from reaper_support import (
    FUTURE,
    STALE,
    answered,
    call_rows,
    delete_calls,
    reap,
    ringing,
)

AS_OF = FUTURE

PHASES = {
    # phase: (status, call maker, due instant of the i-th oldest call; started_at runs with it)
    "ring_timeout": ("Ringing", ringing, lambda i: AS_OF - timedelta(minutes=30) + i * timedelta(seconds=1)),
    "stale_answered": ("Answered", answered, lambda i: AS_OF - STALE - timedelta(minutes=30) + i * timedelta(seconds=1)),
}

BELOW_FLOOR = """
    SELECT count(*)
      FROM messenger.call_reaper_claim_floor AS f
      JOIN messenger.call_reaper_phases() AS p ON p.phase = f.phase
      JOIN messenger.call_sessions AS s
        ON s.status = p.status
       AND (s.started_at, s.call_id) < (f.due_key, f.call_id)
     WHERE s.call_id = ANY(%s)
       AND NOT EXISTS (SELECT FROM messenger.call_reaper_quarantine AS q WHERE q.call_id = s.call_id)"""


@pytest.mark.parametrize("phase", PHASES)
def test_a_held_call_stays_above_the_floor_and_closes_once_released(phase, calls, conn, make_conn,
                                                                     reaper_paused):
    status, make, due = PHASES[phase]
    rows = calls.add([make(due(i)) for i in range(500)])
    ids = [r["call_id"] for r in rows]
    held = rows[29]
    product = make_conn(autocommit=False)
    # answer-call / end-call in flight: the product's row lock, kept open over three cycles.
    product.execute("SELECT 1 FROM messenger.call_sessions WHERE call_id = %s FOR NO KEY UPDATE",
                    [held["call_id"]])

    for cycle in range(3):
        result = reap(conn, batch_size=100, as_of=AS_OF + timedelta(seconds=cycle))
        closed = result["missed_count"] + result["failed_count"]
        assert (closed, result["skipped_locked_count"]) == (100, 1), \
            f"cycle {cycle}: the held call is walked again, passed and counted"
        floor = conn.execute("SELECT due_key, call_id FROM messenger.call_reaper_claim_floor WHERE phase = %s",
                             [phase]).fetchone()
        assert floor == (held["started_at"], held["call_id"]), f"cycle {cycle}: the floor stops at the held call"
        assert conn.execute(BELOW_FLOOR, [ids]).fetchone()[0] == 0
    assert call_rows(conn, [held["call_id"]])[held["call_id"]]["status"] == status

    product.rollback()  # the product's command gave up: the call is still overdue
    result = reap(conn, batch_size=100, as_of=AS_OF + timedelta(seconds=3))
    assert result["missed_count"] + result["failed_count"] == 100
    assert result["skipped_locked_count"] == 0
    assert call_rows(conn, [held["call_id"]])[held["call_id"]]["status"] != status, \
        "the first cycle after the release closes the held call, in the middle of the drain"
    closed_before = sum(1 for r in call_rows(conn, ids[:30]).values() if r["status"] != status)
    assert closed_before == 30, "every call older than the held one is closed"
    assert conn.execute(BELOW_FLOOR, [ids]).fetchone()[0] == 0


def test_a_call_written_below_a_kept_floor_waits_for_the_next_vacuum(calls, conn, reaper_paused):
    """What the floor cannot see, and how long: a drain of 1 000 calls or more keeps its floor
    (the first idle cycles after it would otherwise walk the drain's dead entries); a call
    written afterwards with a due key below it is claimed once VACUUM removed those entries
    (the floor's check of call_sessions' VACUUM count), by the first cycle after that."""
    as_of = FUTURE + timedelta(days=5)
    rows = calls.add([ringing(as_of - timedelta(hours=2) + i * timedelta(seconds=1)) for i in range(1200)])
    conn.execute("CALL messenger.drain_call_timeouts(batch_size => 100, as_of => %s)", [as_of])
    assert all(r["status"] == "Missed" for r in call_rows(conn, [r["call_id"] for r in rows]).values())
    passed, swept = conn.execute("SELECT passed, swept FROM messenger.call_reaper_claim_floor"
                                 " WHERE phase = 'ring_timeout'").fetchone()
    assert passed >= 1000 and swept, "the drain keeps a swept floor"

    # In the middle of the drained range, below where the drain stopped.
    late = calls.add([ringing(as_of - timedelta(hours=2) + timedelta(seconds=600.5))])[0]["call_id"]
    reap(conn, as_of=as_of + timedelta(seconds=15))
    assert call_rows(conn, [late])[late]["status"] == "Ringing", "below a kept floor the call waits"
    conn.execute("VACUUM messenger.call_sessions")
    result = reap(conn, as_of=as_of + timedelta(seconds=30))
    assert result["missed_count"] == 1 and call_rows(conn, [late])[late]["status"] == "Missed", \
        "the first cycle after a VACUUM walks from the start and closes it"


DRAIN_AS_OF = FUTURE + timedelta(days=3)

BELOW_FLOOR_ALL = BELOW_FLOOR.replace("WHERE s.call_id = ANY(%s)\n       AND ", "WHERE ")

SEED_100K = """
    INSERT INTO messenger.call_sessions
           (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
    SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', k.status,
           CASE k.status WHEN 'Ringing' THEN t ELSE t - interval '10 minutes' END,
           CASE k.status WHEN 'Answered' THEN t - interval '9 minutes' END, t
      FROM generate_series(1, 100000) AS g
     CROSS JOIN LATERAL (SELECT CASE WHEN g %% 2 = 0 THEN 'Ringing' ELSE 'Answered' END) AS k (status)
     CROSS JOIN LATERAL (SELECT CASE k.status
                                  WHEN 'Ringing' THEN %(as_of)s::timestamptz - interval '46 seconds' - random() * interval '6 hours'
                                  ELSE %(as_of)s::timestamptz - interval '2 hours 1 second' - random() * interval '1 day' END) AS x (t)
    RETURNING call_id"""

# The product holds one of the oldest active calls of the seeded window (where the drain's
# floor is), sometimes ends it, mostly gives up. Its OFFSET also locks the rows it passes, up to
# 300 at a time: more than any product command would hold, and the drain may stop at a cycle
# where the product held everything left (the sweep after it closes those).
PRODUCT_HOLD = """
    SELECT call_id, status FROM messenger.call_sessions
     WHERE status = %(status)s AND started_at BETWEEN %(lo)s AND %(hi)s
     ORDER BY started_at OFFSET floor(random() * 300)::integer LIMIT 1
       FOR NO KEY UPDATE SKIP LOCKED"""
PRODUCT_END = {
    "Ringing": "UPDATE messenger.call_sessions SET status = 'Missed', end_reason = 'Cancelled',"
               " ended_at = %(t)s, updated_at = %(t)s WHERE call_id = %(id)s",
    "Answered": "UPDATE messenger.call_sessions SET status = 'Ended', end_reason = 'Hangup',"
                " ended_at = %(t)s, updated_at = %(t)s, duration_seconds = 60 WHERE call_id = %(id)s",
}


def test_a_100k_drain_beside_the_product_closes_every_call_once(conn, make_conn, reaper_paused):
    ids = [r[0] for r in conn.execute(SEED_100K, {"as_of": DRAIN_AS_OF}).fetchall()]
    conn.execute("ANALYZE messenger.call_sessions")
    product = make_conn(autocommit=False)
    stop = threading.Event()
    ended: set = set()
    held = [0]

    def play_product():
        rng = random.Random(11)
        while not stop.is_set():
            status = rng.choice(["Ringing", "Answered"])
            with product.transaction():
                row = product.execute(PRODUCT_HOLD, {
                    "status": status, "lo": DRAIN_AS_OF - timedelta(days=2), "hi": DRAIN_AS_OF}).fetchone()
                if row is None:
                    continue
                held[0] += 1
                time.sleep(0.01)
                if rng.random() < 0.3:
                    product.execute(PRODUCT_END[status], {"t": DRAIN_AS_OF, "id": row[0]})
                    ended.add(row[0])

    # Between any two commits no active call of ours may lie below a floor: watched from a
    # third connection while the drain runs.
    observer = make_conn()
    below = []

    def watch_floor():
        while not stop.is_set():
            below.append(observer.execute(BELOW_FLOOR_ALL).fetchone()[0])
            time.sleep(0.02)

    player = threading.Thread(target=play_product)
    watcher = threading.Thread(target=watch_floor)
    try:
        player.start()
        watcher.start()
        conn.execute("CALL messenger.drain_call_timeouts(batch_size => 200, as_of => %s)", [DRAIN_AS_OF])
        stop.set()
        player.join()
        watcher.join()
        # The drain's end: the next cycle walks from the start and takes what the product let go.
        last = reap(conn, batch_size=200, as_of=DRAIN_AS_OF + timedelta(seconds=1))
        reap(conn, batch_size=200, as_of=DRAIN_AS_OF + timedelta(seconds=2))

        left = conn.execute("SELECT count(*) FROM messenger.call_sessions"
                            " WHERE call_id = ANY(%s) AND status IN ('Ringing', 'Answered')", [ids]).fetchone()[0]
        skipped = conn.execute("SELECT sum(skipped_locked_count) FROM messenger.call_reaper_runs"
                               " WHERE as_of = %s", [DRAIN_AS_OF]).fetchone()[0]
        wrong = conn.execute("""
            SELECT count(*)
              FROM messenger.call_sessions AS c
              LEFT JOIN (SELECT reference_id, count(*) AS n FROM messenger.realtime_outbox
                          WHERE reference_id = ANY(%(ids)s) GROUP BY reference_id) AS o ON o.reference_id = c.call_id
             WHERE c.call_id = ANY(%(ids)s)
               AND coalesce(o.n, 0) <> CASE WHEN c.call_id = ANY(%(ended)s) THEN 0
                                             WHEN c.status = 'Missed' AND c.end_reason = 'Timeout' THEN 1
                                             WHEN c.status = 'Failed' THEN 2 ELSE -1 END""",
                             {"ids": ids, "ended": list(ended)}).fetchone()[0]
        # A drain this large keeps its floors (the idle cycles after it start there), swept.
        unswept = conn.execute("SELECT count(*) FROM messenger.call_reaper_claim_floor WHERE NOT swept").fetchone()[0]
        print(f"product held {held[0]} calls during the drain and ended {len(ended)}; the drain passed"
              f" {skipped} held calls in all; the sweep after it closed {last['missed_count'] + last['failed_count']};"
              f" {len(below)} looks at the floor")
        assert held[0] > 0 and skipped > 0, "the product never held a call the drain walked"
        assert len(below) >= 10 and max(below) == 0, \
            f"the floor passed active calls: {max(below)} below it at worst, {len(below)} looks"
        assert left == 0, f"{left} overdue calls were left active"
        assert wrong == 0, f"{wrong} calls have other outbox rows than their closure calls for"
        assert unswept == 0, "the drain's end sweeps below every floor it keeps"
    finally:
        stop.set()
        for thread in (player, watcher):
            if thread.is_alive():
                thread.join()
        conn.execute("DELETE FROM messenger.call_reaper_runs WHERE as_of >= %s", [DRAIN_AS_OF])
        delete_calls(conn, ids)

