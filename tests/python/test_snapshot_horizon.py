"""The long-running scheduled procedures never hold a snapshot for long.

On pg_cron 1.4, pg_cron's CALLs of messenger.run_call_reaper_warden() (all minute, every minute)
and of messenger.run_call_reaper_ticks() (the minute's ticks) spend most of their time waiting (on
1.5+ each CALL is one check or one cycle; the test checks whatever it samples). A sleeping
statement holds a snapshot, and while a snapshot is older than a closed call's update no scan may
prune that row or mark its index entries dead: every later claim, skipped-locked count and idle
cycle of the reaper (and the product's own scans) walk them. With one-second naps a 100k drain
cost 82 instead of 30 buffers per closed call (docs/design.md, "Scheduling").

Measured without clocks: this test assigns a transaction id about every 50 ms and counts how
many of them each procedure's backend_xmin still treats as in progress, i.e. how many of our
ids were assigned after that backend's oldest snapshot was taken.
"""

from __future__ import annotations

import time

from reaper_support import pg_cron_version, warden_is_running

SAMPLE_EVERY = 0.05
SAMPLING = 4.0
# Naps of 0.1 s leave one or two of our ids behind; naps of a second leave about twenty.
MOST_IDS_BEHIND = 8


def test_the_scheduled_procedures_hold_no_snapshot_for_long(conn, warden_running):
    sampling_since = conn.execute("SELECT clock_timestamp()").fetchone()[0]
    ours: list[int] = []
    worst: dict[str, int] = {}
    deadline = time.monotonic() + SAMPLING
    while time.monotonic() < deadline:
        # Autocommit: each call is its own transaction, committed at once.
        ours.append(conn.execute("SELECT (txid_current() % 4294967296)::bigint").fetchone()[0])
        rows = conn.execute(
            """SELECT a.query, a.backend_xmin::text::bigint
                 FROM pg_catalog.pg_stat_activity AS a
                WHERE a.query LIKE 'CALL messenger.run_call_reaper_%'
                  AND a.backend_xmin IS NOT NULL"""
        ).fetchall()
        for query, xmin in rows:
            behind = sum(1 for xid in ours if xid >= xmin)
            worst[query] = max(worst.get(query, 0), behind)
        time.sleep(SAMPLE_EVERY)
    print(f"\nsnapshot horizon: {len(ours)} ids assigned, most still seen as running: {worst}")
    if pg_cron_version(conn) < (1, 5):
        assert any("run_call_reaper_warden" in q for q in worst), (
            "no CALL of the lock warden held a snapshot while sampled: is its pg_cron job running?")
    else:
        # One check a second, milliseconds each: rarely sampled, but it ran meanwhile.
        assert warden_is_running(conn, sampling_since), "the lock warden's job ran while sampled"
    assert len(ours) >= 20, "too few samples to judge"
    assert max(worst.values(), default=0) <= MOST_IDS_BEHIND, worst
