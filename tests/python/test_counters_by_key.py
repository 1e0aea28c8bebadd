"""A cycle reads the counters row by its key, however far the one-row table has grown.

Every busy cycle updates messenger.call_reaper_counters (an idle one folds its run in later, at
most hourly, and still reads the row to decide). While some session holds a snapshot, the
row's old versions cannot be pruned and the table grows by a page every few dozen cycles;
autovacuum truncates it later, if ever. An UPDATE without a WHERE clause reads every page of it
on every cycle from then on (in the bench idle cycles went from 28 to 180 buffers). Needs a
second connection holding a snapshot while cycles commit, hence pytest.
"""

import time

from reaper_support import FUTURE


def test_a_grown_counters_table_costs_a_cycle_a_few_pages(conn, make_conn, reaper_paused):
    conn.execute("ALTER TABLE messenger.call_reaper_counters SET (autovacuum_enabled = false)")
    try:
        holder = make_conn(autocommit=False)
        holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        holder.execute("SELECT count(*) FROM messenger.call_reaper_counters")
        # 600 busy cycles' worth of updates (idle cycles leave the row alone).
        for _ in range(600):
            conn.execute("UPDATE messenger.call_reaper_counters SET last_run_at = clock_timestamp()"
                         " WHERE singleton")
        holder.rollback()
        # Until no snapshot older than the release is left (the warden naps 0.1 s at a time),
        # then a few cycles, whose scans mark the dead versions' index entries.
        released = conn.execute("SELECT pg_current_xact_id()::text").fetchone()[0]
        deadline = time.monotonic() + 10
        while conn.execute(
                "SELECT count(*) FROM pg_catalog.pg_stat_activity"
                " WHERE pid <> pg_backend_pid() AND age(backend_xmin) > age(%s::xid)",
                [released]).fetchone()[0] and time.monotonic() < deadline:
            time.sleep(0.05)
        for _ in range(3):
            conn.execute("SELECT messenger.reap_call_timeouts(as_of => %s)", [FUTURE])

        measure = make_conn(autocommit=False)
        measure.execute("SELECT messenger.reap_call_timeouts(as_of => %s)", [FUTURE])
        pages, read = measure.execute(
            "SELECT pg_relation_size('messenger.call_reaper_counters') / current_setting('block_size')::integer,"
            "       pg_stat_get_xact_blocks_fetched('messenger.call_reaper_counters'::regclass)"
            "     + pg_stat_get_xact_blocks_fetched('messenger.call_reaper_counters_pkey'::regclass)").fetchone()
        measure.rollback()
        assert pages >= 20, f"the held snapshot should have grown the table (it has {pages} pages)"
        assert read <= 6, f"one cycle read {read} pages of the {pages}-page counters table and its key"
    finally:
        conn.execute("ALTER TABLE messenger.call_reaper_counters RESET (autovacuum_enabled)")
