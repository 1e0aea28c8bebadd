"""A busy cycle writes one record at LOG, cycle_completed, with every field a DBA looks a call up
by: the run id and as_of, each phase's count, every closed call as call_id/caller/callee, the
counts, the duration and the skipped-locked count. The per-phase records (cycle_started,
batch_selected, calls_reaped) are at DEBUG. Captured from the client side: client_min_messages
shows the session what the server logs at that level."""

from __future__ import annotations

from datetime import timedelta

from reaper_support import FUTURE, STALE, answered, reap, ringing


def reaper_records(conn, level: str) -> list[str]:
    lines: list[str] = []
    conn.add_notice_handler(lambda d: lines.append(d.message_primary))
    conn.execute(f"SET client_min_messages = {level}")
    return lines


def fields(line: str) -> dict[str, str]:
    return dict(pair.split("=", 1) for pair in line.split()[1:])


def test_a_busy_cycle_writes_one_record_at_log_with_every_closed_call(make_conn, calls, reaper_paused):
    missed = calls.add([ringing(FUTURE - timedelta(minutes=2)) for _ in range(3)])
    failed = calls.add([answered(FUTURE - STALE - timedelta(minutes=1)) for _ in range(2)])
    c = make_conn()
    lines = reaper_records(c, "log")
    run = reap(c, as_of=FUTURE)
    records = [line for line in lines if line.startswith("call_reaper ")]
    assert len(records) == 1 and records[0].startswith("call_reaper event=cycle_completed "), records
    f = fields(records[0])
    assert (f["run_id"], f["result"], f["missed"], f["failed"], f["skipped_locked"]) == (
        str(run["run_id"]), "completed", "3", "2", "0")
    assert f["as_of"].startswith("2100-01-01T00:00:00") and float(f["duration_ms"]) > 0
    assert sorted(f["calls_missed"].split(",")) == sorted(
        f"{r['call_id']}/{r['caller_user_id']}/{r['callee_user_id']}" for r in missed)
    assert sorted(f["calls_failed"].split(",")) == sorted(
        f"{r['call_id']}/{r['caller_user_id']}/{r['callee_user_id']}" for r in failed)


def test_the_per_phase_records_are_at_debug(make_conn, calls, reaper_paused):
    calls.add([ringing(FUTURE - timedelta(minutes=2))])
    c = make_conn()
    lines = reaper_records(c, "debug1")
    reap(c, as_of=FUTURE)
    events = [fields(line)["event"] for line in lines if line.startswith("call_reaper ")]
    assert events == ["cycle_started", "batch_selected", "calls_reaped", "batch_selected", "cycle_completed"], events
