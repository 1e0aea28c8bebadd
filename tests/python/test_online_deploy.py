"""The deploy adds its indexes online: onto a million-call table under a live writer, the
writer never waits a second for a lock, and an interrupted index build left INVALID is rebuilt
by the next deploy. Twice: on a product without an index of active calls (the reaper builds
ix_call_due), and with the service's own ix_call_active (the released ix_call_due, rebuilt on
the way, is then dropped online by the last index change, and the claims read the product's).

A writer inserts a call, moves another one's updated_at and inserts an outbox row every 5 ms
on its own connection with lock_timeout = 1 s, for as long as `sqitch deploy` runs: a statement
that waited longer for a lock raises 55P03 and fails the test. The figures (deploy time,
statements, longest wait) are printed only.
"""

from __future__ import annotations

import time

import psycopg
import pytest
from adoption_support import Writer, create_product_database, product_rows, sqitch

CALLS = 1_000_000
GOAL_S = 1.0


@pytest.mark.parametrize("active_index", [False, True], ids=["builds ix_call_due", "uses ix_call_active"])
def test_deploy_onto_a_million_calls_under_a_live_writer(conn, active_index):
    db = "adopt_online"
    dsn = create_product_database(conn, db, "text", active_index=active_index)
    with psycopg.connect(dsn, autocommit=True) as product:
        product.execute(f"""
            INSERT INTO messenger.call_sessions
                   (call_id, caller_user_id, callee_user_id, media_type, status, end_reason,
                    started_at, answered_at, ended_at, updated_at, duration_seconds)
            SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ended', 'Hangup',
                   t, t, t + interval '1 minute', t + interval '1 minute', 60
              FROM generate_series(1, {CALLS - 1000}) AS g,
                   LATERAL (SELECT now() - g * interval '3 seconds') AS x (t)""")
        product.execute("""
            INSERT INTO messenger.call_sessions
                   (call_id, caller_user_id, callee_user_id, media_type, status, started_at, updated_at)
            SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing',
                   now() - interval '1 hour', now() - interval '1 hour'
              FROM generate_series(1, 1000)""")
        product.execute("""
            INSERT INTO messenger.realtime_outbox (kind, target_kind, target_id, reference_id, payload)
            SELECT 'MessageCreated', 'User', 'user:' || gen_random_uuid(), gen_random_uuid(), '{}'
              FROM generate_series(1, 100000)""")
        product.execute("VACUUM ANALYZE messenger.call_sessions")
        product.execute("VACUUM ANALYZE messenger.realtime_outbox")

        # An earlier deploy interrupted in the middle of the due index's build (cancelled, as a
        # DBA's Ctrl-C or a statement_timeout would) leaves an INVALID index behind.
        # An old snapshot held elsewhere makes the build wait at its end, where it is cancelled.
        sqitch("deploy", db, "--set", "scheduler=none", "--to", "functions/call_due_key@v1.1.0")
        with psycopg.connect(dsn) as holder:
            holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            holder.execute("SELECT count(*) FROM messenger.realtime_outbox")
            product.execute("SET statement_timeout = '3s'")
            try:
                product.execute("""
                    CREATE INDEX CONCURRENTLY ix_call_due ON messenger.call_sessions
                        (status, messenger.call_due_key(status, started_at, updated_at), call_id)
                        WHERE messenger.call_due_key(status, started_at, updated_at) IS NOT NULL""")
            except psycopg.errors.QueryCanceled:
                pass
            product.execute("RESET statement_timeout")
            holder.rollback()
        valid = product.execute("SELECT indisvalid FROM pg_index WHERE indexrelid = 'messenger.ix_call_due'::regclass").fetchone()
        assert valid == (False,), "the interrupted build should have left an INVALID index"

        writer = Writer(dsn, lock_timeout_s=GOAL_S)
        writer.start()
        time.sleep(0.5)
        started = time.monotonic()
        sqitch("deploy", db, "--set", "scheduler=none")
        deploy_s = time.monotonic() - started
        time.sleep(0.5)
        writer.stop.set()
        writer.join(10)
        assert writer.error is None, f"the writer failed: {writer.error!r}"

        sqitch("verify", db, "--set", "scheduler=none")
        valid = product.execute("""
            SELECT (SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass('messenger.ix_call_due')),
                   (SELECT indisvalid FROM pg_index WHERE indexrelid = 'messenger.ux_realtime_outbox_call_event'::regclass),
                   ARRAY(SELECT x::text FROM messenger._call_reaper_claim_indexes('messenger.call_sessions') AS x)""").fetchone()
        if active_index:
            assert valid == (None, True, ["messenger.ix_call_active"]), \
                "beside the product's index the deploy must leave no ix_call_due, and the claims read ix_call_active"
        else:
            assert valid == (True, True, ["messenger.ix_call_due"]), "the re-run deploy must rebuild the interrupted index, valid"
        calls = product_rows(product)[0]
        longest = max(writer.waits)
        print(f"\nonline deploy onto {CALLS:,} calls and 100,000 outbox rows: sqitch deploy took {deploy_s:.1f} s; "
              f"the writer ran {len(writer.waits)} statements meanwhile, longest wait {longest * 1000:.0f} ms "
              f"(goal < {GOAL_S * 1000:.0f} ms); {calls:,} calls after")
        assert len(writer.waits) > 100, "the writer must have run during the deploy"
    
        cycle = product.execute("SELECT missed_count FROM messenger.reap_call_timeouts(batch_size => 2000)").fetchone()
        assert cycle[0] >= 1000
    conn.execute(f"DROP DATABASE {db} WITH (FORCE)")
