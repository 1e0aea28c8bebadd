"""Property: after every cycle the database equals a small pure-Python model of a cycle
(docs/design.md, "What it is for").

Random populations (every status, times on and around each boundary: exactly at the cutoff
and 1 µs either side, plus ties broken by call_id) go through random sequences of cycles
with a random batch_size and a non-decreasing as_of. After each cycle the calls, the outbox
rows (in dispatch order) and the reported counts must equal the model's.

The model follows the claim lanes (docs/design.md, "Three lanes per phase";
deploy/functions/_reap_phase.sql): per phase, first the calls that became due within the last
polling interval, then the older ones, each by due key (messenger.call_due_key: started_at for
phase 1, updated_at for phase 2), then call_id. Not "oldest started_at first" for both phases:
for phase 2 that would sort the whole stale backlog every cycle, and a call the SLO still covers
goes before the backlog. Within a batch the orders differ only in which calls wait for the next
cycle.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

import psycopg
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from psycopg.rows import dict_row
from reaper_support import CALL_COLUMNS, FUTURE, RING, STALE, US, delete_calls

MAX_EXAMPLES = 100
POLL = timedelta(seconds=15)  # messenger.call_reaper_settings.polling_interval default
T0 = FUTURE
EXAMPLES_RUN = []

# Offsets that put a time exactly on, or a microsecond either side of, a boundary of one of
# the cycles below (steps are multiples of these too), plus far-away ones.
NEAR = [timedelta(0), US, -US, timedelta(seconds=1), -timedelta(seconds=1)]
FAR = [timedelta(hours=5), -timedelta(hours=5), -timedelta(days=2), timedelta(days=2)]
STEPS = [timedelta(0), US, timedelta(seconds=1), RING - US, RING, RING + US, STALE - US, STALE,
         STALE + US]


@dataclass
class Call:
    call_id: uuid.UUID
    caller_user_id: uuid.UUID
    callee_user_id: uuid.UUID
    media_type: str
    status: str
    end_reason: str | None
    started_at: datetime
    answered_at: datetime | None
    ended_at: datetime | None
    updated_at: datetime
    duration_seconds: int | None


@dataclass
class Model:
    """One cycle = phase 1 then phase 2, each at most batch_size calls (docs/design.md)."""

    calls: dict[uuid.UUID, Call]
    outbox: list[tuple] = field(default_factory=list)

    @staticmethod
    def claim(due, key, cutoff, batch_size):
        """Fresh lane (due within the last polling interval) first, then the backlog."""
        fresh = sorted((c for c in due if key(c) > cutoff - POLL),
                       key=lambda c: (key(c), c.call_id))[:batch_size]
        backlog = sorted((c for c in due if key(c) <= cutoff - POLL),
                         key=lambda c: (key(c), c.call_id))[:batch_size - len(fresh)]
        return fresh + backlog

    def cycle(self, as_of, batch_size, run_id):
        ringing = self.claim([c for c in self.calls.values()
                              if c.status == "Ringing" and c.started_at <= as_of - RING],
                             lambda c: c.started_at, as_of - RING, batch_size)
        for c in ringing:
            self.calls[c.call_id] = replace(c, status="Missed", end_reason="Timeout",
                                            ended_at=as_of, updated_at=as_of,
                                            duration_seconds=None)
            self.outbox.append(self.push("CallMissed", c.caller_user_id, c, "Missed", run_id,
                                         as_of))
        stale = self.claim([c for c in self.calls.values()
                            if c.status == "Answered" and c.updated_at <= as_of - STALE],
                           lambda c: c.updated_at, as_of - STALE, batch_size)
        for c in stale:
            self.calls[c.call_id] = replace(c, status="Failed", end_reason="Error",
                                            ended_at=as_of, updated_at=as_of,
                                            duration_seconds=None)
            # Recipients are a set: a self-call (caller = callee) gets one row.
            for user in dict.fromkeys((c.caller_user_id, c.callee_user_id)):
                self.outbox.append(self.push("CallEnded", user, c, "Failed", run_id, as_of))
        return len(ringing), len(stale)

    @staticmethod
    def push(kind, user, call, status, run_id, as_of):
        payload = {"callId": str(call.call_id), "status": status, "mediaType": call.media_type}
        return (kind, "User", f"user:{user}", call.call_id, payload, run_id, as_of, None)


@st.composite
def a_call(draw, users):
    # Active calls twice as likely: they are the ones whose order and boundaries matter.
    status = draw(st.sampled_from(["Ringing", "Ringing", "Answered", "Answered", "Ended",
                                   "Missed", "Declined", "Failed"]))
    near = st.sampled_from(NEAR)
    if status == "Ringing":
        started = T0 - RING + draw(st.sampled_from(NEAR + FAR))
        updated = started + draw(st.sampled_from([timedelta(0), timedelta(seconds=2)]))
    else:
        started = T0 - STALE - RING + draw(near) - timedelta(minutes=1)
        updated = T0 - STALE + draw(st.sampled_from(NEAR + FAR))
        # Terminal calls sit exactly where an active one would be due: never touched.
        if status != "Answered":
            started = T0 - RING + draw(near) if draw(st.booleans()) else started
            updated = max(updated, started)
    answered_at = started if status in ("Answered", "Ended") else None
    ended = None if status in ("Ringing", "Answered") else updated
    reason = {"Ended": "Hangup", "Missed": "Timeout", "Declined": "Declined",
              "Failed": "Error"}.get(status)
    return Call(
        call_id=uuid.UUID(int=draw(st.integers(0, 2**128 - 1))),
        caller_user_id=draw(st.sampled_from(users)),
        callee_user_id=draw(st.sampled_from(users)),
        media_type=draw(st.sampled_from(["Audio", "Video"])),
        status=status, end_reason=reason, started_at=started, answered_at=answered_at,
        ended_at=ended, updated_at=updated,
        duration_seconds=draw(st.integers(0, 3600)) if status == "Ended" else None,
    )


USERS = [uuid.UUID(int=i + 1) for i in range(4)]
populations = st.lists(a_call(USERS), max_size=20, unique_by=lambda c: c.call_id)
cycles = st.lists(st.tuples(st.sampled_from(STEPS), st.integers(1, 6)), min_size=1, max_size=5)


def db_state(conn, ids):
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(f"SELECT {', '.join(CALL_COLUMNS)} FROM messenger.call_sessions"
                    " WHERE call_id = ANY(%s)", [ids])
        calls = {r["call_id"]: Call(**r) for r in cur}
    outbox = [tuple(r) for r in conn.execute(
        "SELECT kind, target_kind, target_id, reference_id, payload, correlation_id, created_at,"
        " dispatched_at FROM messenger.realtime_outbox WHERE reference_id = ANY(%s) ORDER BY id",
        [ids])]
    return calls, outbox


@settings(max_examples=MAX_EXAMPLES, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(population=populations, plan=cycles)
# Found by this test: a self-call (caller = callee) used to get a second CallEnded row for the
# same recipient, which the outbox's unique index refused, leaving the call poison forever.
@example(population=[Call(uuid.UUID(int=1), USERS[0], USERS[0], "Video", "Answered", None,
                          T0 - STALE - RING, T0 - STALE - RING, None, T0 - STALE, None)],
         plan=[(timedelta(0), 1)])
def test_database_equals_reference_model(dsn, reaper_paused, population, plan):
    EXAMPLES_RUN.append(len(plan))
    ids = [c.call_id for c in population]
    model = Model({c.call_id: c for c in population})
    with psycopg.connect(dsn, autocommit=True) as conn:
        try:
            with conn.cursor() as cur:
                cur.executemany(
                    f"INSERT INTO messenger.call_sessions ({', '.join(CALL_COLUMNS)})"
                    f" VALUES ({', '.join(['%s'] * len(CALL_COLUMNS))})",
                    [[getattr(c, k) for k in CALL_COLUMNS] for c in population])
            as_of = T0
            for step, batch_size in plan:
                as_of += step
                with conn.cursor(row_factory=dict_row) as cur:
                    result = cur.execute(
                        "SELECT * FROM messenger.reap_call_timeouts(batch_size => %s,"
                        " ring_timeout => %s, stale_timeout => %s, as_of => %s)",
                        [batch_size, RING, STALE, as_of]).fetchone()
                assert result["result"] == "completed"
                missed, failed = model.cycle(as_of, batch_size, result["run_id"])
                assert (result["missed_count"], result["failed_count"],
                        result["skipped_locked_count"], result["poisoned_count"]) == \
                    (missed, failed, 0, 0)
                calls, outbox = db_state(conn, ids)
                assert calls == model.calls
                assert outbox == model.outbox
        finally:
            delete_calls(conn, ids)


def test_hypothesis_ran_its_examples(capsys):
    """Reports (and checks) how many examples the property above went through."""
    line = (f"model property: {len(EXAMPLES_RUN)} examples, {sum(EXAMPLES_RUN)} cycles"
            f" (max_examples={MAX_EXAMPLES})")
    with capsys.disabled():
        print(f"\n{line}")
    assert len(EXAMPLES_RUN) >= MAX_EXAMPLES // 2, line
