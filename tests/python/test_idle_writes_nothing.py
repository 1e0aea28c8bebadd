"""A reaper with nothing to do writes nothing: no WAL, no transaction id, no ledger row.

A cycle on the clock (no as_of) that finds nothing due leaves no row in the run ledger: it takes
the next value of the unlogged sequence messenger.call_reaper_idle_cycles and sets
messenger.call_reaper_idle_cycle_at, neither of which is WAL-logged or needs a transaction id.
call_reaper_metrics() reports them (idle_cycles; last_run_at and last_success_at), so the
liveness alerts keep seeing an idle reaper as alive.

Proven on every path: a cycle run by hand takes no transaction id (and a busy one, or an idle
one with an as_of, still does: the check can fail), a drain's last cycle (the one that finds
nothing) leaves no row, and the real pg_cron job's idle ticks write
no WAL record on any relation of the messenger schema (pg_walinspect names each record's
relation) while the idle count rises. The lock warden, which samples the lock every second,
records no running cycle in its first second, so it does not write for a tick it catches.

When the idle count cannot be read (an unlogged sequence a promoted standby left unreadable),
idle cycles are recorded in the ledger as before, each with a warning, until the runbook's
recovery creates the sequences again.
"""

from __future__ import annotations

import re
import subprocess
import threading
from datetime import timedelta
from pathlib import Path

import psycopg
from reaper_support import reap, restart_server, ringing, this_cluster, wait_for

BLOCK_REF = re.compile(r"rel \d+/(\d+)/(\d+)")
REPO = Path(__file__).resolve().parents[2]
RUNBOOK = REPO / "docs/runbooks/call-timeout-reaper.md"


def metrics(conn) -> dict:
    return dict(zip(("idle_cycles", "last_run_at", "last_success_at", "backlog", "quarantined"), conn.execute(
        "SELECT idle_cycles, last_run_at, last_success_at, backlog_ring_timeout + backlog_stale_answered, quarantined"
        "  FROM messenger.call_reaper_metrics()").fetchone(), strict=True))


def ledger_rows(conn) -> int:
    return conn.execute("SELECT count(*) FROM messenger.call_reaper_runs").fetchone()[0]


def cycle_in_transaction(conn, **args) -> tuple[dict, object]:
    """One cycle inside a transaction: its result and the transaction id it took (None: none)."""
    with conn.transaction():
        row = reap(conn, **args)
        xid = conn.execute("SELECT pg_current_xact_id_if_assigned()").fetchone()[0]
    return row, xid


def test_an_idle_cycle_on_the_clock_takes_no_transaction_id_and_leaves_no_row(conn, calls, reaper_paused):
    before = metrics(conn)
    assert before["backlog"] == 0 and before["quarantined"] == 0, f"something is due already: {before}"
    runs = ledger_rows(conn)
    started = conn.execute("SELECT clock_timestamp()").fetchone()[0]

    row, xid = cycle_in_transaction(conn)
    after = metrics(conn)
    assert (row["result"], row["missed_count"], row["failed_count"]) == ("completed", 0, 0)
    assert xid is None, "the idle cycle took a transaction id: it wrote something"
    assert ledger_rows(conn) == runs, "the idle cycle on the clock wrote a ledger row"
    assert after["idle_cycles"] == before["idle_cycles"] + 1
    assert after["last_success_at"] >= started and after["last_run_at"] >= started

    # The contrast: with an as_of (a DBA's experiment) the idle cycle is recorded ...
    row, xid = cycle_in_transaction(conn, as_of=started)
    assert xid is not None and ledger_rows(conn) == runs + 1
    # ... and a cycle on the clock that closes a call is, with its transaction.
    now = conn.execute("SELECT now()").fetchone()[0]
    calls.add([ringing(now - timedelta(hours=1))])
    row, xid = cycle_in_transaction(conn)
    assert row["missed_count"] == 1 and xid is not None and ledger_rows(conn) == runs + 2
    assert metrics(conn)["idle_cycles"] == before["idle_cycles"] + 1


def test_a_drains_last_cycle_finds_nothing_and_leaves_no_row(conn, calls, reaper_paused):
    # The drain's path: it runs cycles on the clock until one closes nothing. Five due calls at
    # batch 2 are three busy cycles (2, 2, 1), each recorded, and that last idle one, which is not.
    before = metrics(conn)
    assert before["backlog"] == 0 and before["quarantined"] == 0, f"something is due already: {before}"
    runs = ledger_rows(conn)
    now = conn.execute("SELECT now()").fetchone()[0]
    ids = [c["call_id"] for c in calls.add([ringing(now - timedelta(hours=1, seconds=i)) for i in range(5)])]
    conn.execute("CALL messenger.drain_call_timeouts(batch_size => 2)")
    assert [r[0] for r in conn.execute(
        "SELECT missed_count FROM messenger.call_reaper_runs ORDER BY started_at DESC LIMIT %s",
        [ledger_rows(conn) - runs]).fetchall()] == [1, 2, 2]
    assert metrics(conn)["idle_cycles"] == before["idle_cycles"] + 1
    assert conn.execute("SELECT count(*) FROM messenger.call_sessions WHERE call_id = ANY(%s) AND status = 'Missed'",
                        [ids]).fetchone()[0] == 5


def messenger_relfilenodes(conn) -> dict[tuple[int, int], str]:
    """(database oid, relfilenode) of every relation of schema messenger (tables, indexes, TOAST):
    its name."""
    return {(db, node): name for db, node, name in conn.execute(
        """SELECT d.oid::bigint, pg_relation_filenode(c.oid)::bigint, c.oid::regclass::text
             FROM pg_class AS c
             JOIN pg_namespace AS n ON n.oid = c.relnamespace
             CROSS JOIN pg_database AS d
            WHERE d.datname = current_database()
              AND pg_relation_filenode(c.oid) IS NOT NULL
              AND (n.nspname = 'messenger'
                   OR c.oid IN (SELECT t.reltoastrelid FROM pg_class AS t
                                  JOIN pg_namespace AS tn ON tn.oid = t.relnamespace
                                 WHERE tn.nspname = 'messenger')
                   OR c.oid IN (SELECT i.indexrelid FROM pg_index AS i JOIN pg_class AS t ON t.oid = i.indrelid
                                 WHERE t.relnamespace = 'pg_toast'::regnamespace AND t.oid IN
                                       (SELECT r.reltoastrelid FROM pg_class AS r
                                         WHERE r.relnamespace = 'messenger'::regnamespace)))""").fetchall()}


def test_the_scheduled_job_writes_no_wal_while_nothing_rings(conn):
    conn.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
    assert metrics(conn)["backlog"] == 0, "something is due already"
    # A tick that ran idle first: the window then holds whole ticks of the resumed job. After a
    # pause, pg_cron 1.4's job starts its tick loop again at the next minute.
    first = metrics(conn)["idle_cycles"]
    wait_for(lambda: metrics(conn)["idle_cycles"] > first, 80, "an idle tick of the scheduled job")
    runs = ledger_rows(conn)
    lsn0 = conn.execute("SELECT pg_current_wal_insert_lsn()").fetchone()[0]
    idle0 = metrics(conn)["idle_cycles"]
    wait_for(lambda: metrics(conn)["idle_cycles"] >= idle0 + 2, 40, "two more idle ticks of the scheduled job")
    lsn1 = conn.execute("SELECT pg_current_wal_insert_lsn()").fetchone()[0]
    # pg_walinspect reads only flushed WAL, and a window with no commit in it may never be flushed
    # (the WAL writer writes whole pages): a transaction id's commit after lsn1 (asynchronous, it
    # wrote nothing else) has the WAL writer flush it within wal_writer_delay.
    conn.execute("SELECT pg_current_xact_id()")
    wait_for(lambda: conn.execute("SELECT pg_current_wal_flush_lsn() >= %s::pg_lsn", (lsn1,)).fetchone()[0],
             10, "the window's WAL flushed")

    ours = messenger_relfilenodes(conn)
    # A window in which nobody at all wrote WAL (pg_cron 1.4 writes its run details once a minute)
    # has lsn1 = lsn0, which pg_get_wal_records_info refuses: no records, the strongest pass.
    records = conn.execute(
        "SELECT resource_manager, record_type, block_ref FROM pg_get_wal_records_info(%s, %s)"
        " WHERE %s::pg_lsn < %s::pg_lsn",
        (lsn0, lsn1, lsn0, lsn1)).fetchall()
    # The lock warden's relations included: it samples the lock once a second and may catch a
    # tick holding it, which it does not record (test below).
    touched = [(rm, kind, ours[int(db), int(node)]) for rm, kind, ref in records
               for db, node in BLOCK_REF.findall(ref or "") if (int(db), int(node)) in ours]
    print(f"\nidle ticks {metrics(conn)['idle_cycles'] - idle0}: {len(records)} WAL records in the window"
          f" (pg_cron's and the server's), {len(touched)} on the messenger schema")
    assert touched == [], touched
    assert ledger_rows(conn) == runs, "an idle tick wrote a ledger row"


def test_the_warden_records_a_running_cycle_only_once_it_is_a_second_old(conn, make_conn):
    # A running cycle is timed from its transaction start, so the warden has no need to record one
    # it sees in its first second (a tick holds the lock a millisecond or two): an idle reaper's
    # warden then writes nothing. One that runs on is recorded, as before.
    holder = make_conn()
    pid = holder.info.backend_pid
    held = threading.Thread(target=lambda: holder.execute(
        "SELECT pg_advisory_xact_lock(messenger.call_reaper_lock_key()), pg_sleep(2.5)"))
    held.start()
    try:
        wait_for(lambda: conn.execute("SELECT count(*) FROM messenger.call_reaper_lock_holder() WHERE pid = %s",
                                      (pid,)).fetchone()[0], 5, "the cycle holding the lock")
        with conn.transaction():
            young = conn.execute("SELECT clock_timestamp() - xact_start < interval '1 second',"
                                 " messenger._end_stale_call_reaper_lock()"
                                 "  FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()[0]
            assert conn.execute("SELECT pg_current_xact_id_if_assigned()").fetchone()[0] is None, \
                "the warden wrote for a cycle in its first second"
        assert young, "the check came too late to tell"
        wait_for(lambda: conn.execute("SELECT clock_timestamp() - xact_start >= interval '1.2 seconds'"
                                      "  FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()[0],
                 5, "the cycle a second old")
        conn.execute("SELECT messenger._end_stale_call_reaper_lock()")
        assert conn.execute("SELECT count(*) FROM messenger.call_reaper_lock_holders WHERE pid = %s",
                            (pid,)).fetchone()[0] == 1
    finally:
        held.join()


def runbook_recreate_sequences() -> str:
    """The runbook's recovery for "bad magic number in sequence", as a DBA pastes it into psql
    (its \\i paths are relative to the release's root)."""
    section = RUNBOOK.read_text().split('### "bad magic number in sequence', 1)[1].split("\n### ", 1)[0]
    found = re.search(r"```sql\n(.*?)```", section, re.DOTALL)
    assert found, f"{RUNBOOK.name}: no SQL block under the bad magic number heading"
    return found[1]


def recreate_sequences(dsn: str) -> subprocess.CompletedProcess:
    return subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", dsn], input=runbook_recreate_sequences(),
                          cwd=REPO, capture_output=True, text=True, check=False)


def idle_count_readable(conn) -> bool:
    try:
        conn.execute("SELECT pg_sequence_last_value('messenger.call_reaper_idle_cycles')")
        return True
    except psycopg.errors.InternalError:
        return False


def test_an_unreadable_idle_count_is_recorded_in_the_ledger_until_the_runbook_recreates_it(
        conn, dsn, make_conn, reaper_paused):
    # What a standby promoted by Patroni left with PostgreSQL 15.18 (test_failover meets it, not
    # every time): the pages of the unlogged idle sequences unreadable, "bad magic number in
    # sequence" (XX000). Made here every time: zeroed pages over the sequences' files while the
    # server is down. A clean stop keeps an unlogged relation as it is; a crash would reset it.
    assert metrics(conn)["backlog"] == 0, "something is due already"
    paths = [Path(p) for (p,) in conn.execute(
        "SELECT current_setting('data_directory') || '/' || pg_relation_filepath(s)"
        "  FROM unnest(ARRAY['messenger.call_reaper_idle_cycles', 'messenger.call_reaper_idle_cycle_at']::regclass[]) AS s")]

    def zero_the_pages() -> None:
        for path in paths:
            with path.open("r+b") as f:
                f.write(bytes(path.stat().st_size))

    restart_server(conn, this_cluster(conn), "fast", zero_the_pages)
    c = make_conn()
    warnings: list[str] = []
    c.add_notice_handler(lambda d: warnings.append(f"{d.severity_nonlocalized} {d.message_primary}"))
    try:
        assert not idle_count_readable(c), "the zeroed sequence still reads: the test made nothing unreadable"
        runs = ledger_rows(c)
        row = reap(c)
        assert (row["result"], row["missed_count"], row["failed_count"]) == ("completed", 0, 0)
        assert ledger_rows(c) == runs + 1, "the idle cycle was not recorded in the ledger instead"
        assert [w for w in warnings if "event=idle_count_unavailable sqlstate=XX000" in w
                and w.startswith("WARNING ")], warnings
        m = metrics(c)
        assert m["idle_cycles"] is None and m["last_success_at"] is not None, m
        assert c.execute("SELECT last_idle_cycle_at FROM messenger.call_reaper_status()").fetchone()[0] is None
        # The drain's idle cycle on the clock reaches the same ledger: recorded and said too.
        c.execute("CALL messenger.drain_call_timeouts()")
        assert ledger_rows(c) == runs + 2, "the drain's idle cycle was not recorded in the ledger"
        assert len([w for w in warnings if "event=idle_count_unavailable" in w]) == 2, warnings

        done = recreate_sequences(dsn)
        assert done.returncode == 0, done.stdout + done.stderr
        # Quiet again: the next idle cycle on the clock is counted, not recorded.
        reap(c)
        assert ledger_rows(c) == runs + 2
        assert metrics(c)["idle_cycles"] == 1
        assert c.execute("SELECT last_idle_cycle_at IS NOT NULL FROM messenger.call_reaper_status()").fetchone()[0]
    finally:
        if not idle_count_readable(c):
            done = recreate_sequences(dsn)
            assert done.returncode == 0, done.stdout + done.stderr
