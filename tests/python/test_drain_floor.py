"""A drain's claim floor never passes a call the product holds.

During a drain each full backlog lane moves the phase's claim floor, so the next cycle starts
where this one stopped. A call passed because answer-call or end-call held its row must stay
above the floor: it is walked (and counted in skipped_locked) by every cycle while it is held,
and claimed by the first cycle after it is released, while the drain goes on. Needs a second
connection holding the row, hence pytest.
"""

from datetime import timedelta

import pytest
from reaper_support import FUTURE, STALE, answered, call_rows, reap, ringing

AS_OF = FUTURE

PHASES = {
    # phase: (status, call maker, due key of the i-th oldest call)
    "ring_timeout": ("Ringing", ringing, lambda i: AS_OF - timedelta(minutes=30) + i * timedelta(seconds=1)),
    "stale_answered": ("Answered", answered, lambda i: AS_OF - STALE - timedelta(minutes=30) + i * timedelta(seconds=1)),
}

BELOW_FLOOR = """
    SELECT count(*)
      FROM messenger.call_reaper_claim_floor AS f
      JOIN messenger.call_sessions AS s
        ON s.status = CASE f.phase WHEN 'ring_timeout' THEN 'Ringing' ELSE 'Answered' END
       AND (messenger.call_due_key(s.status, s.started_at, s.updated_at), s.call_id) < (f.due_key, f.call_id)
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
        assert floor == (due(29), held["call_id"]), f"cycle {cycle}: the floor stops at the held call"
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
