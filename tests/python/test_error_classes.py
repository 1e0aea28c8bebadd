"""Error classes: poison or not is decided by SQLSTATE (deploy/functions/_reap_close.sql).

An error about a call's data (classes 22, 23, P0001) makes that call poison: quarantined, the
rest of the batch commits. A transient or systemic error (classes 08, 40, 42, 53, 55, 57, 58,
F0, XX, or one error hitting every call of the batch) says nothing about the call: the whole
cycle rolls back, is recorded as failed with its SQLSTATE and counted in errors_total, nothing
is quarantined, and the next cycle retries. Each error is raised by a product trigger on one
call of a batch, as a deadlock, a full disk or a revoked privilege would surface there.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from psycopg import sql
from psycopg.rows import dict_row
from reaper_support import FUTURE, assert_all_or_nothing, call_rows, reap, ringing

AS_OF = FUTURE

# One SQLSTATE per class the issue lists as transient or systemic (57014, query_canceled, is
# cancellation: never caught at all, see test_faults.py).
SYSTEMIC = ["40P01", "40001", "53100", "55P03", "57P01", "58030", "XX001", "08006", "42501"]


@pytest.fixture
def raise_on(conn):
    """raise_on(sqlstate, call_ids): a BEFORE UPDATE trigger raising `sqlstate` for those calls."""
    made = []

    def install(sqlstate, call_ids):
        name = f"raise_{len(made)}"
        conn.execute(sql.SQL("""
            CREATE FUNCTION public.{name}() RETURNS trigger LANGUAGE plpgsql
            SET search_path = pg_catalog AS $$
            BEGIN
                IF NEW.call_id::text = ANY ({ids}) AND NEW.status <> OLD.status THEN
                    RAISE EXCEPTION 'product trigger failed' USING ERRCODE = {state};
                END IF;
                RETURN NEW;
            END $$""").format(name=sql.Identifier(name), ids=sql.Literal([str(i) for i in call_ids]),
                              state=sql.Literal(sqlstate)))
        conn.execute(sql.SQL("CREATE TRIGGER {name} BEFORE UPDATE ON messenger.call_sessions"
                             " FOR EACH ROW EXECUTE FUNCTION public.{name}()").format(
            name=sql.Identifier(name)))
        made.append(name)

    yield install
    for name in made:
        conn.execute(sql.SQL("DROP TRIGGER IF EXISTS {} ON messenger.call_sessions").format(sql.Identifier(name)))
        conn.execute(sql.SQL("DROP FUNCTION IF EXISTS public.{}()").format(sql.Identifier(name)))


def counters(conn):
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute("SELECT runs_rolled_back, errors, items_poisoned FROM messenger.call_reaper_counters").fetchone()


def ledger(conn, run_id):
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute("SELECT result, error_sqlstate, missed_count, poisoned_count"
                           "  FROM messenger.call_reaper_runs WHERE run_id = %s", [run_id]).fetchone()


def quarantined(conn, ids):
    return conn.execute("SELECT count(*) FROM messenger.call_reaper_quarantine WHERE call_id = ANY(%s)",
                        [ids]).fetchone()[0]


@pytest.mark.parametrize("sqlstate", SYSTEMIC)
def test_transient_or_systemic_error_fails_the_cycle(sqlstate, conn, calls, raise_on, reaper_paused):
    rows = calls.add([ringing(AS_OF - timedelta(minutes=5 - i)) for i in range(5)])
    ids = [r["call_id"] for r in rows]
    raise_on(sqlstate, [ids[2]])
    before = counters(conn)

    result = reap(conn, as_of=AS_OF)

    assert (result["result"], result["missed_count"], result["poisoned_count"]) == ("failed", 0, 0)
    assert ledger(conn, result["run_id"])["error_sqlstate"] == sqlstate
    after = counters(conn)
    assert (after["runs_rolled_back"] - before["runs_rolled_back"], after["errors"] - before["errors"],
            after["items_poisoned"] - before["items_poisoned"]) == (1, 1, 0)
    assert quarantined(conn, ids) == 0
    # Rolled back whole: the four healthy calls of the batch are not closed either.
    assert assert_all_or_nothing(conn, ids) == (0, 0)

    # The fault passes; the next cycle retries and closes all five.
    conn.execute("DROP TRIGGER raise_0 ON messenger.call_sessions")
    retry = reap(conn, as_of=AS_OF + timedelta(seconds=15))
    assert (retry["result"], retry["missed_count"], retry["poisoned_count"]) == ("completed", 5, 0)


@pytest.mark.parametrize("sqlstate", ["P0001", "23514", "22003"])
def test_data_error_on_one_call_is_poison(sqlstate, conn, calls, raise_on, reaper_paused):
    rows = calls.add([ringing(AS_OF - timedelta(minutes=5 - i)) for i in range(5)])
    ids = [r["call_id"] for r in rows]
    raise_on(sqlstate, [ids[2]])

    result = reap(conn, as_of=AS_OF)

    assert (result["result"], result["missed_count"], result["poisoned_count"]) == ("completed", 4, 1)
    assert quarantined(conn, ids) == 1
    assert call_rows(conn, [ids[2]])[ids[2]]["status"] == "Ringing"


@pytest.mark.parametrize("sqlstate", ["P0001", "23514"])
def test_data_error_on_every_call_is_still_poison(sqlstate, conn, calls, raise_on, reaper_paused):
    """A batch made only of poison calls (a flood) is poison, not a failed cycle: the calls
    are quarantined so the healthy calls behind them get their turn."""
    rows = calls.add([ringing(AS_OF - timedelta(minutes=5 - i)) for i in range(4)])
    ids = [r["call_id"] for r in rows]
    raise_on(sqlstate, ids)

    result = reap(conn, as_of=AS_OF)

    assert (result["result"], result["poisoned_count"]) == ("completed", 4)
    assert quarantined(conn, ids) == 4


def test_other_error_hitting_every_call_fails_the_cycle(conn, calls, raise_on, reaper_paused):
    """An error outside the data classes that hits every call of the batch says nothing about
    any one call: the cycle fails with it; hitting one call of the batch, it is poison."""
    rows = calls.add([ringing(AS_OF - timedelta(minutes=5 - i)) for i in range(4)])
    ids = [r["call_id"] for r in rows]
    raise_on("0A000", ids)
    before = counters(conn)

    every = reap(conn, as_of=AS_OF)

    assert (every["result"], every["missed_count"], every["poisoned_count"]) == ("failed", 0, 0)
    assert ledger(conn, every["run_id"])["error_sqlstate"] == "0A000"
    assert counters(conn)["errors"] - before["errors"] == 1
    assert quarantined(conn, ids) == 0

    conn.execute("DROP TRIGGER raise_0 ON messenger.call_sessions")
    raise_on("0A000", [ids[1]])
    one = reap(conn, as_of=AS_OF + timedelta(seconds=15))
    assert (one["result"], one["missed_count"], one["poisoned_count"]) == ("completed", 3, 1)
