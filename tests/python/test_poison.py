"""Poison calls: a call whose transition or outbox insert raises is isolated, counted,
quarantined with backoff and logged with its CallId; the rest of the batch commits, and
poison never starves healthy calls, even when it fills whole batches."""

from datetime import timedelta

import psycopg
import pytest
from psycopg import sql
from reaper_support import (
    FUTURE,
    STALE,
    answered,
    assert_all_or_nothing,
    call_rows,
    outbox_rows,
    reap,
    ringing,
)

AS_OF = FUTURE
BACKOFF = timedelta(minutes=1)  # messenger.call_reaper_settings default


@pytest.fixture
def poison(conn):
    """poison(table, column, values): a trigger on `table` raising for rows whose `column`
    is one of `values`. Its DETAIL carries a fake phone number that must never reach a log."""
    made = []

    def install(table, column, values):
        name = f"reaper_poison_{len(made)}"
        conn.execute(sql.SQL("""
            CREATE FUNCTION public.{name}() RETURNS trigger LANGUAGE plpgsql
            SET search_path = pg_catalog AS $$
            BEGIN
                IF NEW.{column}::text = ANY ({values}) THEN
                    RAISE EXCEPTION 'poison row for the test'
                        USING DETAIL = 'phone=+15550100 name=Alice';
                END IF;
                RETURN NEW;
            END $$""").format(name=sql.Identifier(name), column=sql.Identifier(column),
                              values=sql.Literal([str(v) for v in values])))
        conn.execute(sql.SQL("CREATE TRIGGER {name} BEFORE INSERT OR UPDATE ON {table}"
                             " FOR EACH ROW EXECUTE FUNCTION public.{name}()").format(
            name=sql.Identifier(name), table=sql.SQL(table)))
        made.append((name, table))

    yield install
    for name, table in made:
        conn.execute(sql.SQL("DROP TRIGGER IF EXISTS {} ON {}").format(
            sql.Identifier(name), sql.SQL(table)))
        conn.execute(sql.SQL("DROP FUNCTION IF EXISTS public.{}()").format(sql.Identifier(name)))


def quarantine(conn, ids):
    with conn.cursor(row_factory=psycopg.rows.dict_row) as cur:
        cur.execute("SELECT * FROM messenger.call_reaper_quarantine WHERE call_id = ANY(%s)"
                    " ORDER BY call_id", [ids])
        return {r["call_id"]: r for r in cur}


def test_single_poison_call_is_isolated_and_logged(conn, calls, poison, reaper_paused):
    rows = calls.add([ringing(AS_OF - timedelta(minutes=10 - i)) for i in range(6)])
    ids = [r["call_id"] for r in rows]
    bad = rows[2]["call_id"]
    poison("messenger.call_sessions", "call_id", [bad])
    notices = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary))

    result = reap(conn, as_of=AS_OF)

    assert (result["result"], result["missed_count"], result["poisoned_count"]) == \
        ("completed", 5, 1)
    assert call_rows(conn, [bad])[bad]["status"] == "Ringing"
    assert assert_all_or_nothing(conn, ids) == (5, 5)
    q = quarantine(conn, [bad])[bad]
    assert (q["phase"], q["attempts"], q["last_sqlstate"], q["last_run_id"]) == \
        ("ring_timeout", 1, "P0001", result["run_id"])
    assert q["next_attempt_at"] == AS_OF + BACKOFF
    failed = [n for n in notices if "event=call_poisoned" in n]
    assert len(failed) == 1 and f"call_id={bad}" in failed[0]
    assert "Alice" not in failed[0] and "+15550100" not in failed[0]


def test_poison_filling_whole_batches_never_starves_healthy_calls(conn, calls, poison,
                                                                  reaper_paused):
    # Beside tests/pgtap/poison.sql on purpose: that file proves the batch rule inside one
    # transaction; this one runs committed cycles past the backoff and sees it double.
    # 8 poison calls are due before the 3 healthy ones, with batches of 5.
    bad = calls.add([ringing(AS_OF - timedelta(hours=1, minutes=i)) for i in range(8)])
    good = calls.add([ringing(AS_OF - timedelta(minutes=i + 1)) for i in range(3)])
    bad_ids = [r["call_id"] for r in bad]
    good_ids = [r["call_id"] for r in good]
    poison("messenger.call_sessions", "call_id", bad_ids)

    # A batch made only of poison ends: one cycle, every call tried once, all counted.
    first = reap(conn, as_of=AS_OF, batch_size=5)
    assert (first["result"], first["missed_count"], first["poisoned_count"]) == \
        ("completed", 0, 5)
    # Quarantined calls are not claimed again before next_attempt_at: healthy ones are.
    second = reap(conn, as_of=AS_OF + timedelta(seconds=15), batch_size=5)
    assert (second["missed_count"], second["poisoned_count"]) == (2, 3)
    third = reap(conn, as_of=AS_OF + timedelta(seconds=30), batch_size=5)
    assert (third["missed_count"], third["poisoned_count"]) == (1, 0)
    assert {r["status"] for r in call_rows(conn, good_ids).values()} == {"Missed"}
    assert {r["status"] for r in call_rows(conn, bad_ids).values()} == {"Ringing"}

    # Past the backoff they are retried, a bounded share of each batch (ceil(5 / 10) = 1),
    # earliest next attempt first, and the backoff doubles.
    retry_at = AS_OF + BACKOFF + timedelta(seconds=1)
    retried = []
    for i in range(5):
        cycle = reap(conn, as_of=retry_at + i * timedelta(seconds=15), batch_size=5)
        assert (cycle["missed_count"], cycle["poisoned_count"]) == (0, 1)
        retried.append(retry_at + i * timedelta(seconds=15))
    q = quarantine(conn, bad_ids)
    first_five = sorted(bad, key=lambda r: r["started_at"])[:5]  # quarantined by the first cycle
    assert [q[r["call_id"]]["attempts"] for r in first_five] == [2] * 5
    assert sorted(q[r["call_id"]]["next_attempt_at"] for r in first_five) == \
        [at + 2 * BACKOFF for at in retried]
    assert assert_all_or_nothing(conn, bad_ids + good_ids) == (3, 3)


@pytest.mark.parametrize("phase", ["ring_timeout", "stale_answered"])
def test_failing_outbox_insert_rolls_back_that_call_only(phase, conn, calls, poison,
                                                         reaper_paused):
    if phase == "ring_timeout":
        rows = calls.add([ringing(AS_OF - timedelta(minutes=i + 1)) for i in range(4)])
        bad = rows[1]
        target = bad["caller_user_id"]
    else:
        rows = calls.add([answered(AS_OF - STALE - timedelta(minutes=i + 1)) for i in range(4)])
        bad = rows[1]
        # The callee's row is written after the caller's: the caller's must go too.
        target = bad["callee_user_id"]
    ids = [r["call_id"] for r in rows]
    poison("messenger.realtime_outbox", "target_id", [f"user:{target}"])

    result = reap(conn, as_of=AS_OF)

    assert result["poisoned_count"] == 1
    assert result["missed_count" if phase == "ring_timeout" else "failed_count"] == 3
    assert call_rows(conn, [bad["call_id"]])[bad["call_id"]]["status"] == \
        ("Ringing" if phase == "ring_timeout" else "Answered")
    assert outbox_rows(conn, [bad["call_id"]]) == []
    per_call = 1 if phase == "ring_timeout" else 2
    assert assert_all_or_nothing(conn, ids) == (3, 3 * per_call)


def test_duplicate_outbox_row_is_a_poison_call(conn, calls, reaper_paused):
    """A CallMissed row that already exists (another writer pushed it) trips the outbox's
    unique index: the call is poison, not closed without its own push."""
    rows = calls.add([ringing(AS_OF - timedelta(minutes=i + 1)) for i in range(2)])
    bad = rows[0]
    conn.execute(
        "INSERT INTO messenger.realtime_outbox (kind, target_kind, target_id, reference_id, payload)"
        " VALUES ('CallMissed', 'User', %s, %s, %s)",
        [f"user:{bad['caller_user_id']}", bad["call_id"],
         psycopg.types.json.Jsonb({"callId": str(bad["call_id"]), "status": "Missed",
                                   "mediaType": "Audio"})])
    result = reap(conn, as_of=AS_OF)
    assert (result["missed_count"], result["poisoned_count"]) == (1, 1)
    assert quarantine(conn, [bad["call_id"]])[bad["call_id"]]["last_sqlstate"] == "23505"


def test_released_quarantined_call_is_reaped_next_cycle(conn, calls, poison, reaper_paused):
    (row,) = calls.add([ringing(AS_OF - timedelta(minutes=1))])
    call_id = row["call_id"]
    poison("messenger.call_sessions", "call_id", [call_id])
    assert reap(conn, as_of=AS_OF)["poisoned_count"] == 1
    conn.execute("DROP TRIGGER reaper_poison_0 ON messenger.call_sessions")

    # Fixed but still quarantined: left alone until next_attempt_at.
    assert reap(conn, as_of=AS_OF + timedelta(seconds=15))["missed_count"] == 0
    conn.execute("DELETE FROM messenger.call_reaper_quarantine WHERE call_id = %s", [call_id])
    released = reap(conn, as_of=AS_OF + timedelta(seconds=30))
    assert (released["missed_count"], released["poisoned_count"]) == (1, 0)
    assert call_rows(conn, [call_id])[call_id]["status"] == "Missed"
    assert quarantine(conn, [call_id]) == {}


def test_quarantine_row_of_a_call_closed_elsewhere_is_removed(conn, calls, poison,
                                                              reaper_paused):
    (row,) = calls.add([ringing(AS_OF - timedelta(minutes=1))])
    call_id = row["call_id"]
    poison("messenger.call_sessions", "caller_user_id", [row["caller_user_id"]])
    assert reap(conn, as_of=AS_OF)["poisoned_count"] == 1
    conn.execute("DROP TRIGGER reaper_poison_0 ON messenger.call_sessions")
    # The product declines it meanwhile.
    conn.execute("UPDATE messenger.call_sessions SET status = 'Declined', end_reason = 'Declined',"
                 " ended_at = %s, updated_at = %s WHERE call_id = %s", [AS_OF, AS_OF, call_id])
    # The clean-up reads only quarantine rows whose retry is due, never the whole quarantine:
    # the row stays through its backoff and goes at its next attempt.
    reap(conn, as_of=AS_OF + timedelta(seconds=15))
    assert list(quarantine(conn, [call_id])) == [call_id]
    cleaned = reap(conn, as_of=AS_OF + BACKOFF)
    assert quarantine(conn, [call_id]) == {}
    assert (cleaned["missed_count"], cleaned["poisoned_count"]) == (0, 0)
    assert outbox_rows(conn, [call_id]) == []
