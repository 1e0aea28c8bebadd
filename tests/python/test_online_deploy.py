"""The deploy adds its indexes online: onto a million-call table under a live writer, the
writer never waits a second for a lock, and an interrupted index build left INVALID is rebuilt
by the next deploy. Twice: on a product without an index of active calls (the reaper builds
ix_call_due), and with the service's own ix_call_active (the reaper builds none on call_sessions,
and the claims read the product's).

A fresh deploy runs each decision once: an event trigger in the product database records every
index created and dropped while `sqitch deploy` runs, and no index the deploy created may be one
it dropped again (the milestones' plan built v1.0.0's ix_call_due only to drop it beside
ix_call_active); beside ix_call_active, none is created on call_sessions at all.

A writer inserts a call, moves another one's updated_at and inserts an outbox row every 5 ms
on its own connection with lock_timeout = 1 s, for as long as `sqitch deploy` runs: a statement
that waited longer for a lock raises 55P03 and fails the test. The figures (deploy time,
statements, longest wait) are printed only.
"""

from __future__ import annotations

import os
import time

import psycopg
import pytest
from adoption_support import Writer, create_product_database, product_rows, sqitch

CALLS = 1_000_000
GOAL_S = 1.0

# Every index created or dropped in the product database from here on, by any statement (CREATE
# INDEX CONCURRENTLY and DROP INDEX CONCURRENTLY fire event triggers too), with the order they
# happened in. A table of the test's own in schema public: nothing the reaper reads or reverts.
WATCH_INDEXES = """
CREATE TABLE public.index_events (at bigserial, event text, name text);
CREATE FUNCTION public.watch_index_created() RETURNS event_trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.index_events (event, name)
    SELECT 'created', c.object_identity FROM pg_event_trigger_ddl_commands() AS c WHERE c.object_type = 'index';
END $$;
CREATE FUNCTION public.watch_index_dropped() RETURNS event_trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.index_events (event, name)
    SELECT 'dropped', d.object_identity FROM pg_event_trigger_dropped_objects() AS d
     WHERE d.object_type = 'index' AND d.original;
END $$;
CREATE EVENT TRIGGER watch_index_created ON ddl_command_end WHEN TAG IN ('CREATE INDEX')
    EXECUTE FUNCTION public.watch_index_created();
CREATE EVENT TRIGGER watch_index_dropped ON sql_drop EXECUTE FUNCTION public.watch_index_dropped();
"""


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

        # An earlier deploy interrupted in the middle of an index build (cancelled by a
        # statement_timeout, as a DBA's Ctrl-C would) leaves the reaper's INVALID index behind,
        # recorded: ix_call_due's where the reaper builds it, else the outbox index's. An old
        # snapshot held elsewhere makes the build wait at its end, where it is cancelled.
        interrupted = "ux_realtime_outbox_call_event" if active_index else "ix_call_due"
        sqitch("deploy", db, "--set", "scheduler=none", "--to", f"indexes/{interrupted}^")
        with psycopg.connect(dsn) as holder:
            holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            holder.execute("SELECT count(*) FROM messenger.realtime_outbox")
            stopped = sqitch("deploy", db, "--set", "scheduler=none", "--to", f"indexes/{interrupted}",
                             env={**os.environ, "PGOPTIONS": "-c statement_timeout=3s"}, check=False)
            holder.rollback()
        assert stopped.returncode != 0, stopped.stdout
        valid = product.execute("SELECT indisvalid FROM pg_index WHERE indexrelid = %s::regclass",
                                (f"messenger.{interrupted}",)).fetchone()
        assert valid == (False,), f"the interrupted build should have left an INVALID index\n{stopped.stdout}{stopped.stderr}"
        product.execute(WATCH_INDEXES)

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
        # pg_temp: the scratch index the deploy builds on an empty temporary copy of a table's
        # columns to learn how this server spells a definition; never on the product.
        events = product.execute("SELECT event, name FROM index_events"
                                 " WHERE name NOT LIKE 'pg\\_temp.%' ORDER BY at").fetchall()
        created = [name for event, name in events if event == "created"]
        assert sorted(created) == ([f"messenger.{interrupted}"] if active_index else
                                   ["messenger.ix_call_due", "messenger.ux_realtime_outbox_call_event"]), events
        # The one drop is the interrupted build's leftover, before its rebuild; nothing this
        # deploy built is dropped again.
        assert events == [("dropped", f"messenger.{interrupted}")] + [("created", n) for n in created], events
        product.execute("DROP EVENT TRIGGER watch_index_created; DROP EVENT TRIGGER watch_index_dropped")
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
