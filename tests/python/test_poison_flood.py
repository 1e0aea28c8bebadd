"""Poison floods and bounded isolation (issue 9).

A product trigger refuses to close thousands of overdue Ringing calls that are older than
everything else; one healthy call becomes due before each 15 s cycle (batch 200, as_of
advancing 15 s per cycle). Every healthy call must close in the first cycle at or after its
due time while the poison keeps being retried with its backoff; no cycle may open more than 64
subtransactions, whatever the share of poison in its batch.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from psycopg.rows import dict_row
from reaper_support import FUTURE, RING, call_rows, reap, ringing

AS_OF = FUTURE
POLL = timedelta(seconds=15)   # polling_interval default: the cycle step
BATCH = 200
CYCLES = 40
SUBXACT_BUDGET = 64            # deploy/functions/reap_call_timeouts.sql
DEAD = uuid.UUID(int=0xDEAD)   # the poison calls' caller


@pytest.fixture
def refuse_dead_caller(conn):
    """A product trigger refusing to close any call of caller DEAD (SQLSTATE P0001)."""
    conn.execute(f"""
        CREATE FUNCTION public.flood_poison() RETURNS trigger LANGUAGE plpgsql
        SET search_path = pg_catalog AS $$
        BEGIN
            IF NEW.caller_user_id = '{DEAD}' AND NEW.status <> OLD.status THEN
                RAISE EXCEPTION 'flood poison';
            END IF;
            RETURN NEW;
        END $$""")
    conn.execute("CREATE TRIGGER flood_poison BEFORE UPDATE ON messenger.call_sessions"
                 " FOR EACH ROW EXECUTE FUNCTION public.flood_poison()")
    yield
    conn.execute("DROP TRIGGER IF EXISTS flood_poison ON messenger.call_sessions")
    conn.execute("DROP FUNCTION IF EXISTS public.flood_poison()")


def add_poison(conn, calls, n, oldest):
    """n Ringing calls of caller DEAD, one second apart from `oldest` (one statement)."""
    ids = [r[0] for r in conn.execute(
        "INSERT INTO messenger.call_sessions (call_id, caller_user_id, callee_user_id, media_type,"
        " status, started_at, updated_at)"
        " SELECT gen_random_uuid(), %s, gen_random_uuid(), 'Audio', 'Ringing', t, t"
        "   FROM generate_series(1, %s) AS g, LATERAL (SELECT %s + g * interval '1 second') AS x (t)"
        " RETURNING call_id", [DEAD, n, oldest]).fetchall()]
    calls.ids.extend(ids)
    conn.execute("ANALYZE messenger.call_sessions")
    return ids


def ledger(conn, run_id):
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute("SELECT * FROM messenger.call_reaper_runs WHERE run_id = %s",
                           [run_id]).fetchone()


def next_xid(conn):
    """The next transaction id the server will assign (assigns none itself)."""
    return conn.execute("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint").fetchone()[0]


@pytest.mark.parametrize("poison_count", [2000, 10000])
def test_poison_flood_never_delays_a_healthy_call(poison_count, conn, calls, refuse_dead_caller,
                                                  reaper_paused, capsys):
    # Healthy call k is due 7 s before cycle k (after cycle k - 1): cycle k must close it.
    cycle_at = [AS_OF + k * POLL for k in range(CYCLES)]
    healthy = calls.add([ringing(at - RING - timedelta(seconds=7)) for at in cycle_at])
    poison = add_poison(conn, calls, poison_count, AS_OF - timedelta(days=1))
    poisoned_before = conn.execute(
        "SELECT items_poisoned FROM messenger.call_reaper_counters").fetchone()[0]

    lags, subxacts, deferred, poisoned = [], [], 0, 0
    for k, at in enumerate(cycle_at):
        result = reap(conn, as_of=at, batch_size=BATCH)
        assert result["result"] == "completed", (k, result)
        row = call_rows(conn, [healthy[k]["call_id"]])[healthy[k]["call_id"]]
        assert (row["status"], row["ended_at"]) == ("Missed", at), \
            f"healthy call {k} not closed by cycle {k} with {poison_count} poison calls"
        lags.append((row["ended_at"] - (healthy[k]["started_at"] + RING)).total_seconds())
        run = ledger(conn, result["run_id"])
        subxacts.append(run["subtransactions"])
        deferred += run["deferred_count"]
        poisoned += result["poisoned_count"]

    with conn.cursor(row_factory=dict_row) as cur:
        q = cur.execute(
            "SELECT count(*) AS n, max(attempts) AS max_attempts,"
            "       count(*) FILTER (WHERE attempts >= 2) AS retried"
            "  FROM messenger.call_reaper_quarantine WHERE call_id = ANY(%s)", [poison]).fetchone()
    poisoned_after = conn.execute(
        "SELECT items_poisoned FROM messenger.call_reaper_counters").fetchone()[0]
    with capsys.disabled():
        print(f"\npoison flood {poison_count}: healthy-call lag max {max(lags):.0f} s,"
              f" mean {sum(lags) / len(lags):.1f} s over {CYCLES} cycles; subtransactions per"
              f" cycle max {max(subxacts)}, mean {sum(subxacts) / len(subxacts):.1f}; poisoned"
              f" attempts {poisoned}, deferred {deferred}; quarantined {q['n']}, retried"
              f" {q['retried']}, max attempts {q['max_attempts']}")
    # Every healthy call closed 7 s after its due time: the first cycle at or after it.
    assert max(lags) == 7
    # The poison is still worked on: quarantined, retried after its backoff, counted.
    assert q["n"] > 0 and q["retried"] > 0 and q["max_attempts"] >= 3
    assert poisoned_after - poisoned_before == poisoned
    assert all(call["status"] == "Ringing" for call in call_rows(conn, poison).values())
    assert max(subxacts) <= SUBXACT_BUDGET


@pytest.mark.parametrize("poison_count", [1, 10, 200])
def test_isolating_poison_stays_within_64_subtransactions(poison_count, conn, calls,
                                                          refuse_dead_caller, reaper_paused,
                                                          capsys):
    """A batch of 200 holding 1, 10 or 200 poison calls (spread evenly): the cycle bisects and
    never opens more than 64 subtransactions; what it could not try is left for the next
    cycle, neither closed nor quarantined, and counted."""
    step = BATCH // poison_count
    specs = [ringing(AS_OF - timedelta(hours=1) + i * timedelta(seconds=1),
                     caller_user_id=DEAD if i % step == 0 else uuid.uuid4())
             for i in range(BATCH)]
    rows = calls.add(specs)
    ids = [r["call_id"] for r in rows]
    bad = {r["call_id"] for r in rows if r["caller_user_id"] == DEAD}
    assert len(bad) == poison_count

    before = next_xid(conn)
    result = reap(conn, as_of=AS_OF, batch_size=BATCH)
    xids = next_xid(conn) - before
    run = ledger(conn, result["run_id"])
    quarantined = {r[0] for r in conn.execute(
        "SELECT call_id FROM messenger.call_reaper_quarantine WHERE call_id = ANY(%s)", [ids])}
    states = call_rows(conn, ids)
    closed = {i for i, c in states.items() if c["status"] == "Missed"}
    report = (f"{poison_count} poison in a batch of {BATCH}: subtransactions"
              f" {run['subtransactions']}, transaction ids assigned {xids}, closed {len(closed)},"
              f" poisoned {result['poisoned_count']}, deferred {run['deferred_count']}")

    assert result["result"] == "completed"
    assert run["subtransactions"] <= SUBXACT_BUDGET
    # One top-level xid plus at most one per subtransaction: never past the 64-entry cache.
    assert xids <= 1 + SUBXACT_BUDGET
    assert quarantined <= bad and not (closed & bad)
    assert len(closed) + result["poisoned_count"] + run["deferred_count"] == BATCH
    assert result["poisoned_count"] == len(quarantined)
    if poison_count == 1:
        # O(p log n): the set, then one failing half per level down to the poison call.
        assert run["subtransactions"] <= 2 + 2 * 8
        assert (len(closed), run["deferred_count"]) == (BATCH - 1, 0)
    else:
        assert run["deferred_count"] > 0
    deferred_ids = set(ids) - closed - quarantined
    assert all(states[i]["status"] == "Ringing" for i in deferred_ids)

    # The next cycles finish the batch: every healthy call closes, every poison call is
    # quarantined, each cycle within the budget.
    def quarantined_now():
        return {r[0] for r in conn.execute(
            "SELECT call_id FROM messenger.call_reaper_quarantine WHERE call_id = ANY(%s)", [ids])}

    for k in range(1, 30):
        nxt = reap(conn, as_of=AS_OF + k * POLL, batch_size=BATCH)
        assert ledger(conn, nxt["run_id"])["subtransactions"] <= SUBXACT_BUDGET
        states = call_rows(conn, ids)
        if all(states[i]["status"] == "Missed" for i in set(ids) - bad) and quarantined_now() == bad:
            break
    with capsys.disabled():
        print(f"\n{report}; settled after {k + 1} cycles")
    assert all(states[i]["status"] == "Missed" for i in set(ids) - bad)
    assert quarantined_now() == bad

