"""The reaper on a Citus cluster, by hand: not part of `make test`, which has no Citus.

Run against a coordinator whose database holds the Citus stand-in and the deployed reaper
(docs/citus.md, "Running tests/citus": one from a fresh machine, with scripts/citus-cluster):

    CITUS_COORDINATOR='host=... port=... dbname=messenger user=postgres' \
    CITUS_STOP_WORKER='<shell command that stops the worker at {host}:{port}>' \
    CITUS_START_WORKER='<shell command that starts it again>' \
    .venv/bin/python -m pytest tests/citus -rP

-rP (or -s) shows the figures the pgbench and SLO tests print; -ra leaves them out.

The database is a throwaway one: the tests empty the stand-in's two tables. Each test closes
calls through the coordinator's cycle (the fan-out over every worker's shard pairs) and checks
every call against the outbox, through the coordinator and per shard. The scheduled job is paused
while a test runs cycles by hand, running for the pgbench and SLO tests, and resumed when the
module ends (messenger.pause_call_reaper() stops it on a cluster left up).
"""

from __future__ import annotations

import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

ROOT = Path(__file__).resolve().parents[2]
OWNER_ROLE = "messenger_call_reaper_owner"


def need(name: str) -> str:
    value = os.environ.get(name, "")
    if not value:
        raise pytest.UsageError(f"tests/citus needs {name} (docs/citus.md, 'Running tests/citus')")
    return value


def connect(dsn: str | None = None) -> psycopg.Connection:
    return psycopg.connect(dsn or need("CITUS_COORDINATOR"), autocommit=True)


def workers(conn) -> list[tuple[str, int]]:
    return [(h, p) for h, p in conn.execute(
        "SELECT nodename, nodeport FROM pg_dist_node"
        " WHERE groupid <> 0 AND noderole = 'primary' AND isactive ORDER BY nodeport")]


def worker_dsn(host: str, port: int) -> str:
    return make_conninfo(need("CITUS_COORDINATOR"), host=host, port=str(port))


def libpq_env() -> dict[str, str]:
    """The environment for a libpq tool (sqitch, pgbench) to reach the coordinator."""
    params = conninfo_to_dict(need("CITUS_COORDINATOR"))
    names = {"host": "PGHOST", "port": "PGPORT", "user": "PGUSER", "dbname": "PGDATABASE",
             "password": "PGPASSWORD", "sslmode": "PGSSLMODE"}
    return {**os.environ, **{names[k]: str(v) for k, v in params.items() if k in names}}


def insert_calls(conn, n: int, status: str = "Ringing", age: str = "10 minutes") -> list[uuid.UUID]:
    ids = [uuid.uuid4() for _ in range(n)]
    conn.execute(
        "INSERT INTO messenger.call_sessions"
        " (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)"
        " SELECT i, gen_random_uuid(), gen_random_uuid(), 'Audio', %s, now() - %s::interval,"
        "        CASE WHEN %s = 'Answered' THEN now() - %s::interval END, now() - %s::interval"
        "   FROM unnest(%s::uuid[]) AS i",
        (status, age, status, age, age, ids))
    return ids


def pushes(conn, ids) -> dict[uuid.UUID, tuple[str, int, int]]:
    """call_id -> (status, CallMissed rows, CallEnded rows), read through the coordinator."""
    return {r[0]: r[1:] for r in conn.execute(
        "SELECT c.call_id, c.status,"
        "       count(o.id) FILTER (WHERE o.kind = 'CallMissed')::int,"
        "       count(o.id) FILTER (WHERE o.kind = 'CallEnded')::int"
        "  FROM messenger.call_sessions AS c"
        "  LEFT JOIN messenger.realtime_outbox AS o ON o.reference_id = c.call_id"
        " WHERE c.call_id = ANY(%s) GROUP BY c.call_id, c.status", (list(ids),))}


def assert_exactly_once(conn, missed=(), failed=(), live=()) -> None:
    """Each call in its expected state with exactly its pushes; every outbox row in the shard its
    call's hash routes to (a lookup by key finds as many rows as a scan of all shards)."""
    seen = pushes(conn, [*missed, *failed, *live])
    wrong = {i: seen.get(i) for i in missed if seen.get(i) != ("Missed", 1, 0)}
    wrong |= {i: seen.get(i) for i in failed if seen.get(i) != ("Failed", 0, 2)}
    wrong |= {i: seen.get(i) for i in live if seen.get(i) is None or seen[i][1:] != (0, 0)
              or seen[i][0] not in ("Ringing", "Answered")}
    assert not wrong, f"{len(wrong)} calls not closed exactly once, e.g. {list(wrong.items())[:3]}"
    by_key = conn.execute("SELECT count(*) FROM messenger.realtime_outbox WHERE reference_id = ANY(%s)",
                          ([*missed, *failed, *live],)).fetchone()[0]
    scanned = conn.execute("SELECT count(*) FROM messenger.realtime_outbox").fetchone()[0]
    assert by_key == scanned == len(missed) + 2 * len(failed)


def last_runs(conn, n: int = 1):
    return conn.execute(
        "SELECT result, missed_count, failed_count, poisoned_count, error_sqlstate, error_message"
        "  FROM messenger.call_reaper_runs WHERE lock_acquired ORDER BY started_at DESC LIMIT %s",
        (n,)).fetchall()


def on_workers(conn, command: str) -> list[str]:
    rows = conn.execute("SELECT success, result FROM run_command_on_workers(%s)", (command,)).fetchall()
    assert all(ok for ok, _ in rows), rows
    return [r for _, r in rows]


@pytest.fixture(scope="module")
def coordinator():
    with connect() as conn:
        version = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'citus'").fetchone()
        assert version, "CITUS_COORDINATOR is not a database with the citus extension"
        assert conn.execute("SELECT rolcanlogin FROM pg_roles WHERE rolname = %s", (OWNER_ROLE,)).fetchone()[0], \
            f"ALTER ROLE {OWNER_ROLE} LOGIN first (docs/citus.md)"
        conn.execute("SELECT messenger.pause_call_reaper()")
        yield conn
        conn.execute("SELECT messenger.resume_call_reaper()")


@pytest.fixture
def conn(coordinator):
    """An empty product: the stand-in's tables and every worker's quarantine emptied, the workers
    prepared."""
    coordinator.execute("TRUNCATE messenger.call_sessions, messenger.realtime_outbox")
    coordinator.execute("SELECT * FROM messenger.call_reaper_citus_prepare()")
    on_workers(coordinator, "DELETE FROM messenger.call_reaper_quarantine")
    return coordinator


def test_prepare_gives_every_worker_its_tables_and_grant_and_is_idempotent(conn):
    for _ in range(2):
        rows = conn.execute("SELECT node, success, result FROM messenger.call_reaper_citus_prepare()").fetchall()
        assert [r[1] for r in rows] == [True] * len(workers(conn)), rows
    settings = conn.execute("SELECT to_jsonb(s)::text FROM messenger.call_reaper_settings AS s").fetchone()[0]
    for host, port in workers(conn):
        with connect(worker_dsn(host, port)) as w:
            tables = {r[0] for r in w.execute(
                "SELECT c.relname FROM pg_class AS c WHERE c.relnamespace = 'messenger'::regnamespace"
                "   AND obj_description(c.oid, 'pg_class') LIKE 'the reaper''s worker copy%'")}
            assert tables == {"call_reaper_quarantine", "call_reaper_settings", "call_reaper_claim_floor"}
            assert w.execute("SELECT to_jsonb(s)::text FROM messenger.call_reaper_settings AS s").fetchall() \
                == [(settings,)]
            assert w.execute("SELECT has_sequence_privilege(%s, pg_get_serial_sequence("
                             "'messenger.realtime_outbox', 'id'), 'USAGE')", (OWNER_ROLE,)).fetchone()[0]


def test_sqitch_verify_passes_with_the_owner_that_can_log_in(coordinator):
    # requires/call_reaper_roles refuses an owner that can LOGIN, except where Citus is: the
    # fan-out needs it. The tree's own verify scripts, against this coordinator.
    run = subprocess.run(["sqitch", "verify"], cwd=ROOT, env=libpq_env(), capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]


def test_without_a_login_owner_prepare_and_the_cycle_refuse_with_55000_and_close_nothing(conn):
    due = insert_calls(conn, 200)
    with conn.transaction():
        conn.execute(f"ALTER ROLE {OWNER_ROLE} NOLOGIN")
        with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState), conn.transaction():
            conn.execute("SELECT * FROM messenger.call_reaper_citus_prepare()")
        result = conn.execute("SELECT result FROM messenger.reap_call_timeouts()").fetchone()[0]
        assert result == "failed"
        assert last_runs(conn)[0][4] == "55000"
        assert_exactly_once(conn, live=due)
        raise psycopg.Rollback()
    assert conn.execute("SELECT rolcanlogin FROM pg_roles WHERE rolname = %s", (OWNER_ROLE,)).fetchone()[0]


def test_one_cycle_closes_every_due_call_of_every_shard_once_and_the_ledger_adds_them_up(conn):
    missed = insert_calls(conn, 5000)
    failed = insert_calls(conn, 300, status="Answered", age="3 hours")
    live = insert_calls(conn, 500, age="1 second")
    before = conn.execute("SELECT items_missed, items_failed FROM messenger.call_reaper_counters").fetchone()
    row = conn.execute("SELECT result, missed_count, failed_count FROM messenger.reap_call_timeouts(batch_size => 10000)").fetchone()
    assert row == ("completed", 5000, 300)
    assert_exactly_once(conn, missed=missed, failed=failed, live=live)
    after = conn.execute("SELECT items_missed, items_failed FROM messenger.call_reaper_counters").fetchone()
    assert (after[0] - before[0], after[1] - before[1]) == (5000, 300)
    # The calls of every shard, and the outbox rows in the colocated shard of the same node.
    shards = conn.execute(
        "SELECT count(DISTINCT get_shard_id_for_distribution_column('messenger.call_sessions', call_id))"
        "  FROM messenger.call_sessions WHERE status = 'Missed'").fetchone()[0]
    assert shards == conn.execute("SELECT count(*) FROM pg_dist_shard"
                                  " WHERE logicalrelid = 'messenger.call_sessions'::regclass").fetchone()[0]
    again = conn.execute("SELECT result, missed_count, failed_count FROM messenger.reap_call_timeouts()").fetchone()
    assert again == ("completed", 0, 0)
    assert_exactly_once(conn, missed=missed, failed=failed, live=live)


def test_a_drain_closes_a_backlog_in_batches_across_the_shards_exactly_once(conn):
    due = insert_calls(conn, 20000)
    conn.execute("CALL messenger.drain_call_timeouts(batch_size => 200)")
    assert_exactly_once(conn, missed=due)
    runs = conn.execute("SELECT count(*), sum(missed_count) FROM messenger.call_reaper_runs"
                        " WHERE started_at > now() - interval '10 minutes' AND result = 'completed'"
                        "   AND missed_count > 0").fetchone()
    assert runs[1] >= 20000 and runs[0] >= 2


def floors(conn) -> list[tuple[str, str, str, bool]]:
    """Every worker's claim floors: (worker, calls relation, phase, anchored in that relation and
    that relation one of the worker's shards)."""
    rows = []
    for host, port in workers(conn):
        with connect(worker_dsn(host, port)) as w:
            w.execute("SET citus.override_table_visibility = off")
            for calls, phase, call_id, anchor in w.execute(
                    "SELECT f.calls::text, f.phase, f.call_id, f.anchor_started_at"
                    "  FROM messenger.call_reaper_claim_floor AS f ORDER BY 1, 2").fetchall():
                held = w.execute(
                    "SELECT EXISTS (SELECT FROM pg_dist_shard AS s JOIN pg_dist_placement AS p USING (shardid)"
                    "                WHERE shard_name(s.logicalrelid, s.shardid) = %s"
                    "                  AND s.logicalrelid = 'messenger.call_sessions'::regclass"
                    "                  AND p.groupid = (SELECT groupid FROM pg_dist_local_group))", (calls,)).fetchone()[0]
                anchored = held and w.execute(
                    f"SELECT EXISTS (SELECT FROM {calls} WHERE call_id = %s AND started_at = %s)",
                    (call_id, anchor)).fetchone()[0]
                rows.append((f"{host}:{port}", calls, phase, anchored))
    return rows


def test_each_shard_pair_keeps_its_own_claim_floor_on_its_worker_and_a_drain_still_closes_once(conn):
    # 20,000 calls over 32 shards, about 625 a shard: a cycle at batch 200 fills every pair's
    # backlog lane, so each pair keeps a floor, keyed by its own shard and anchored in it.
    due = insert_calls(conn, 20000)
    # A floor of a relation that is no shard pair of the worker (a shard moved away) goes.
    on_workers(conn, "INSERT INTO messenger.call_reaper_claim_floor (calls, phase, due_key, call_id, reset_at,"
                     " as_of, run_id, anchor_started_at, vacuums, swept, passed)"
                     " VALUES ('messenger.call_reaper_settings', 'ring_timeout', now(), gen_random_uuid(), now(),"
                     "         now(), gen_random_uuid(), now(), 0, true, 0)")
    row = conn.execute("SELECT result, missed_count FROM messenger.reap_call_timeouts(batch_size => 200)").fetchone()
    assert row == ("completed", 32 * 200)
    kept = floors(conn)
    assert len(kept) == 32 and all(r[2] == "ring_timeout" and r[3] for r in kept), kept[:3]
    assert len({r[1] for r in kept}) == 32
    # The next cycle of a pair starts its backlog lane at its floor.
    host, port = workers(conn)[0]
    with connect(worker_dsn(host, port)) as w:
        w.execute("SET citus.override_table_visibility = off")
        calls, key = w.execute("SELECT calls::text, due_key FROM messenger.call_reaper_claim_floor LIMIT 1").fetchone()
        start = w.execute(
            "SELECT (messenger._reap_lanes(ROW('ring_timeout', gen_random_uuid(), now(), s.ring_timeout, 200,"
            "        s.polling_interval, s.poison_backoff, s.poison_backoff_max, 63, NULL, %s::regclass,"
            "        NULL)::messenger.call_reaper_phase_run)).backlog_key FROM messenger.call_reaper_settings AS s",
            (calls,)).fetchone()[0]
        assert start == key
        # A call released from this worker's quarantine deletes this worker's floors only.
        w.execute("INSERT INTO messenger.call_reaper_quarantine (call_id, phase, attempts, first_failed_at,"
                  " last_failed_at, next_attempt_at, last_sqlstate, last_message, last_run_id)"
                  " VALUES (gen_random_uuid(), 'ring_timeout', 1, now(), now(), now(), 'P0001', 'test', gen_random_uuid())")
        w.execute("DELETE FROM messenger.call_reaper_quarantine")
    left = floors(conn)
    assert left and all(not r[0].endswith(f":{port}") for r in left)
    assert len(left) == sum(not r[0].endswith(f":{port}") for r in kept)
    conn.execute("CALL messenger.drain_call_timeouts(batch_size => 200)")
    assert_exactly_once(conn, missed=due)


def placements(conn, ids) -> dict[uuid.UUID, tuple[int, str, int]]:
    """call_id -> (shard id, worker host, worker port) of the shard that holds it."""
    return {r[0]: r[1:] for r in conn.execute(
        "SELECT i, s.shardid, n.nodename, n.nodeport FROM unnest(%s::uuid[]) AS i"
        "  JOIN pg_dist_shard AS s"
        "    ON s.shardid = get_shard_id_for_distribution_column('messenger.call_sessions', i)"
        "  JOIN pg_dist_placement AS p USING (shardid) JOIN pg_dist_node AS n USING (groupid)",
        (list(ids),))}


def test_poison_on_one_shard_is_quarantined_there_and_stops_neither_its_shard_nor_the_others(conn):
    due = insert_calls(conn, 3000)
    where = placements(conn, due)
    shard, host, port = where[due[0]]
    # Three calls of one shard: a trigger on that shard alone, made on its worker.
    bad = [i for i in due if where[i][0] == shard][:3]
    with connect(worker_dsn(host, port)) as w:
        w.execute("SET citus.enable_ddl_propagation = off")
        w.execute(f"""CREATE FUNCTION public.citus_poison() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN IF NEW.call_id = ANY ('{{{",".join(map(str, bad))}}}'::uuid[]) THEN
                RAISE EXCEPTION 'poison row for the test'; END IF; RETURN NEW; END $$""")
        w.execute(f"CREATE TRIGGER citus_poison BEFORE UPDATE ON messenger.call_sessions_{shard}"
                  " FOR EACH ROW EXECUTE FUNCTION public.citus_poison()")
        try:
            # Bisecting three poison calls out of a shard's batch may spend the pair's phase budget;
            # the calls left are deferred to the next cycle, as on one server.
            totals = [0, 0]
            for _ in range(5):
                result, missed, poisoned = conn.execute(
                    "SELECT result, missed_count, poisoned_count FROM messenger.reap_call_timeouts(batch_size => 10000)").fetchone()
                assert result == "completed"
                totals = [totals[0] + missed, totals[1] + poisoned]
                if missed == 0:
                    break
            assert totals == [3000 - 3, 3]
            quarantined = {r[0] for r in w.execute("SELECT call_id FROM messenger.call_reaper_quarantine")}
            assert quarantined == set(bad)
            # The metrics read on the coordinator count the workers' quarantine, and the poison
            # calls as backlog: still due, not closed.
            assert conn.execute("SELECT quarantined, backlog_ring_timeout FROM messenger.call_reaper_metrics()"
                                ).fetchone() == (3, 3)
        finally:
            w.execute(f"DROP TRIGGER citus_poison ON messenger.call_sessions_{shard}")
            w.execute("DROP FUNCTION public.citus_poison()")
    assert_exactly_once(conn, missed=[i for i in due if i not in bad], live=bad)


def test_a_poison_flood_on_one_shard_never_delays_a_healthy_call_of_any_shard(conn):
    # 2,000 poison calls in one shard, older than everything else; before each cycle 320 healthy
    # calls become due (in the fresh lane, about 10 a shard, that shard's among them). Each
    # cycle closes every healthy call of every shard, the poison shard's too, while that pair
    # spends its budget bisecting poison out of its backlog and quarantining it on its worker.
    shard = conn.execute("SELECT min(shardid) FROM pg_dist_shard WHERE logicalrelid = 'messenger.call_sessions'::regclass"
                         ).fetchone()[0]
    host, port = conn.execute("SELECT n.nodename, n.nodeport FROM pg_dist_placement AS p JOIN pg_dist_node AS n"
                              " USING (groupid) WHERE p.shardid = %s", (shard,)).fetchone()
    poison = [r[0] for r in conn.execute(
        "SELECT i FROM (SELECT gen_random_uuid() AS i FROM generate_series(1, 100000)) AS x"
        " WHERE get_shard_id_for_distribution_column('messenger.call_sessions', i) = %s LIMIT 2000", (shard,))]
    assert len(poison) == 2000
    conn.execute("INSERT INTO messenger.call_sessions"
                 " (call_id, caller_user_id, callee_user_id, media_type, status, started_at, updated_at)"
                 " SELECT i, '00000000-0000-0000-0000-00000000dead', gen_random_uuid(), 'Audio', 'Ringing',"
                 "        now() - interval '20 minutes', now() - interval '20 minutes' FROM unnest(%s::uuid[]) AS i",
                 (poison,))
    healthy: list[uuid.UUID] = []
    with connect(worker_dsn(host, port)) as w:
        w.execute("SET citus.enable_ddl_propagation = off")
        w.execute("""CREATE FUNCTION public.citus_flood() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN IF NEW.caller_user_id = '00000000-0000-0000-0000-00000000dead' AND NEW.status <> OLD.status THEN
                RAISE EXCEPTION 'flood poison'; END IF; RETURN NEW; END $$""")
        w.execute(f"CREATE TRIGGER citus_flood BEFORE UPDATE ON messenger.call_sessions_{shard}"
                  " FOR EACH ROW EXECUTE FUNCTION public.citus_flood()")
        try:
            quarantined = []
            for _ in range(6):
                fresh = insert_calls(conn, 320, age="50 seconds")
                on_shard = sum(w[0] == shard for w in placements(conn, fresh).values())
                assert on_shard > 0
                healthy += fresh
                result, missed, poisoned, run_id = conn.execute(
                    "SELECT result, missed_count, poisoned_count, run_id"
                    "  FROM messenger.reap_call_timeouts(batch_size => 200)").fetchone()
                assert (result, missed) == ("completed", 320)
                deferred = conn.execute("SELECT deferred_count FROM messenger.call_reaper_runs WHERE run_id = %s",
                                        (run_id,)).fetchone()[0]
                assert poisoned > 0 and deferred > 0
                quarantined.append(w.execute("SELECT count(*) FROM messenger.call_reaper_quarantine").fetchone()[0])
            # Bisection isolates poison within each cycle's budget, and none of it is tried twice
            # before its backoff.
            assert quarantined == sorted(quarantined) and len(set(quarantined)) == len(quarantined)
            assert quarantined[-1] < 2000
            assert {r[0] for r in w.execute("SELECT call_id FROM messenger.call_reaper_quarantine")} <= set(poison)
        finally:
            w.execute(f"DROP TRIGGER citus_flood ON messenger.call_sessions_{shard}")
            w.execute("DROP FUNCTION public.citus_flood()")
    assert conn.execute("SELECT quarantined FROM messenger.call_reaper_metrics()").fetchone()[0] == quarantined[-1]
    assert_exactly_once(conn, missed=healthy, live=poison)


def test_the_preview_lists_exactly_what_the_next_cycle_closes_per_shard_and_lane(conn):
    backlog = insert_calls(conn, 1500)                  # long past the cutoff: the backlog lane
    fresh = insert_calls(conn, 300, age="50 seconds")   # due within the last polling interval
    stale = insert_calls(conn, 200, status="Answered", age="3 hours")
    quarantined, retried = backlog[:2], backlog[2]    # in their backoff; past it: the retry lane
    for host, port in workers(conn):
        with connect(worker_dsn(host, port)) as w:
            w.execute("INSERT INTO messenger.call_reaper_quarantine (call_id, phase, attempts, first_failed_at,"
                      " last_failed_at, next_attempt_at, last_sqlstate, last_message, last_run_id)"
                      " SELECT i, 'ring_timeout', 1, now(), now(),"
                      "        now() + CASE WHEN i = %s THEN interval '-1 minute' ELSE interval '1 hour' END, 'P0001', 'test',"
                      "        gen_random_uuid() FROM unnest(%s::uuid[]) AS i"
                      "  WHERE get_shard_id_for_distribution_column('messenger.call_sessions', i) IN"
                      "        (SELECT p.shardid FROM pg_dist_placement AS p"
                      "          WHERE p.groupid = (SELECT groupid FROM pg_dist_local_group))",
                      (retried, [*quarantined, retried]))
    preview = conn.execute("SELECT phase, call_id, reason FROM messenger.preview_call_timeouts(batch_size => 5)").fetchall()
    row = conn.execute("SELECT result, run_id FROM messenger.reap_call_timeouts(batch_size => 5)").fetchone()
    assert row[0] == "completed"
    closed = {r[0] for r in conn.execute("SELECT reference_id FROM messenger.realtime_outbox WHERE correlation_id = %s",
                                         (row[1],))}
    assert {r[1] for r in preview} == closed
    def capped(ids):  # what batch 5 takes of these calls: at most 5 in each shard pair
        return sum(min(5, n) for (n,) in conn.execute(
            "SELECT count(*) FROM unnest(%s::uuid[]) AS i"
            " GROUP BY get_shard_id_for_distribution_column('messenger.call_sessions', i)", (list(ids),)))

    assert sum(r[0] == "stale_answered" for r in preview) == capped(stale)
    assert not set(quarantined) & closed
    # The retry lane first (one call at batch 5), then the fresh lane: every pair's fresh calls
    # are taken before its backlog, in the retried call's pair one fewer.
    assert retried in closed
    why = [r[2] for r in preview if r[1] == retried]
    assert len(why) == 1 and why[0].startswith("Ringing since")
    assert "quarantined (backoff expired at " in why[0] and "retried (shard messenger.call_sessions_" in why[0]
    home = placements(conn, [retried])[retried][0]
    beside = sum(shard == home for shard, *_ in placements(conn, fresh).values())
    assert sum(i in set(fresh) for i in closed) == capped(fresh) - (1 if beside >= 5 else 0)
    assert all("(shard messenger.call_sessions_" in r[2] for r in preview)


def test_pairs_with_nothing_due_are_passed_over_even_with_calls_talking_for_hours(conn):
    # 2,000 calls talking for 3 hours on every shard, none due: no pair runs a cycle (the run's
    # subtransactions are its own block's only), none is closed. The cycle runs at an as_of: an
    # idle cycle on the clock leaves no ledger row to read its subtransactions from, one with an
    # as_of does (_reap_ledger). The as_of is read before the cycle starts, so never its clock.
    talking = insert_calls(conn, 2000, status="Answered", age="3 hours")
    conn.execute("UPDATE messenger.call_sessions SET updated_at = now() WHERE status = 'Answered'")
    as_of = conn.execute("SELECT clock_timestamp()").fetchone()[0]
    row = conn.execute("SELECT result, missed_count, failed_count, run_id FROM messenger.reap_call_timeouts(as_of => %s)",
                       (as_of,)).fetchone()
    assert row[:3] == ("completed", 0, 0)
    assert conn.execute("SELECT subtransactions FROM messenger.call_reaper_runs WHERE run_id = %s",
                        (row[3],)).fetchall() == [(1,)]
    assert_exactly_once(conn, live=talking)


def test_an_expired_quarantine_row_of_a_call_the_product_ended_goes_though_nothing_is_due(conn):
    # As on one server, the retry lane drops the row of a quarantined call that is no longer due
    # once its backoff expired, though its shard has nothing due.
    ended = insert_calls(conn, 1, age="1 second")
    conn.execute("UPDATE messenger.call_sessions SET status = 'Declined', end_reason = 'Declined', ended_at = now(),"
                 " updated_at = now() WHERE call_id = %s", (ended[0],))
    host, port = placements(conn, ended)[ended[0]][1:]
    with connect(worker_dsn(host, port)) as w:
        w.execute("INSERT INTO messenger.call_reaper_quarantine (call_id, phase, attempts, first_failed_at,"
                  " last_failed_at, next_attempt_at, last_sqlstate, last_message, last_run_id)"
                  " VALUES (%s, 'ring_timeout', 1, now() - interval '2 minutes', now() - interval '2 minutes',"
                  "         now() - interval '1 minute', 'P0001', 'test', gen_random_uuid())", (ended[0],))
        row = conn.execute("SELECT result, missed_count, failed_count FROM messenger.reap_call_timeouts()").fetchone()
        assert row == ("completed", 0, 0)
        assert w.execute("SELECT count(*) FROM messenger.call_reaper_quarantine").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM messenger.realtime_outbox").fetchone()[0] == 0


def test_a_workers_quarantine_rows_of_calls_it_no_longer_holds_go_after_their_backoff(conn):
    # On a worker: the row of a call the product deleted, and of a call in a shard of the other
    # worker (as a shard moved away leaves it), both past their backoff, go; a row still in its
    # backoff stays, its call in this worker's shard.
    calls = insert_calls(conn, 200, age="1 second")
    where = placements(conn, calls)
    host, port = workers(conn)[0]
    here = [i for i in calls if where[i][1:] == (host, port)]
    there = [i for i in calls if where[i][1:] != (host, port)]
    deleted, waiting, elsewhere = here[0], here[1], there[0]
    conn.execute("DELETE FROM messenger.call_sessions WHERE call_id = %s", (deleted,))
    with connect(worker_dsn(host, port)) as w:
        w.execute("INSERT INTO messenger.call_reaper_quarantine (call_id, phase, attempts, first_failed_at,"
                  " last_failed_at, next_attempt_at, last_sqlstate, last_message, last_run_id)"
                  " SELECT i, 'ring_timeout', 1, now() - interval '2 minutes', now() - interval '2 minutes',"
                  "        now() + CASE WHEN i = %s THEN interval '1 hour' ELSE interval '-1 minute' END,"
                  "        'P0001', 'test', gen_random_uuid() FROM unnest(%s::uuid[]) AS i",
                  (waiting, [deleted, waiting, elsewhere]))
        assert conn.execute("SELECT quarantined FROM messenger.call_reaper_metrics()").fetchone()[0] == 3
        row = conn.execute("SELECT result, missed_count FROM messenger.reap_call_timeouts()").fetchone()
        assert row == ("completed", 0)
        assert [r[0] for r in w.execute("SELECT call_id FROM messenger.call_reaper_quarantine")] == [waiting]
    assert conn.execute("SELECT quarantined FROM messenger.call_reaper_metrics()").fetchone()[0] == 1
    assert_exactly_once(conn, live=[i for i in calls if i != deleted])


def test_the_exporter_scrapes_a_coordinator_as_the_monitor_role(conn, tmp_path):
    # The exporter's one query as messenger_call_reaper_monitor: the backlog across the shards,
    # the quarantine of every worker.
    due = insert_calls(conn, 300)
    host, port = workers(conn)[0]
    mine = [i for i, w in placements(conn, due).items() if w[1:] == (host, port)][:2]
    with connect(worker_dsn(host, port)) as w:
        w.execute("INSERT INTO messenger.call_reaper_quarantine (call_id, phase, attempts, first_failed_at,"
                  " last_failed_at, next_attempt_at, last_sqlstate, last_message, last_run_id)"
                  " SELECT i, 'ring_timeout', 1, now(), now(), now() + interval '1 hour', 'P0001', 'test',"
                  "        gen_random_uuid() FROM unnest(%s::uuid[]) AS i", (mine,))
    dsn = os.environ.get("CITUS_MONITOR_DSN") or make_conninfo(need("CITUS_COORDINATOR"),
                                                                user="messenger_call_reaper_monitor")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    exporter = subprocess.Popen([str(ROOT / ".venv" / "bin" / "call-reaper-exporter"), "--dsn", dsn,
                                 "--web.listen-address", f"127.0.0.1:{free}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        text = ""
        for _ in range(40):
            try:
                text = urllib.request.urlopen(f"http://127.0.0.1:{free}/metrics", timeout=5).read().decode()
                if "messenger_call_reaper_up 1.0" in text:
                    break
            except OSError:
                pass
            time.sleep(0.5)
    finally:
        exporter.terminate()
        exporter.wait(10)
    assert "messenger_call_reaper_up 1.0" in text
    assert 'messenger_call_reaper_active_backlog{phase="ring_timeout"} 300.0' in text
    assert "messenger_call_reaper_quarantined_calls 2.0" in text


def test_a_stopped_worker_fails_the_run_and_the_other_workers_closures_count(conn):
    stop, start = need("CITUS_STOP_WORKER"), need("CITUS_START_WORKER")
    due = insert_calls(conn, 4000)
    host, port = workers(conn)[0]
    on_stopped = [i for i, w in placements(conn, due).items() if w[1:] == (host, port)]
    subprocess.run(stop.format(host=host, port=port), shell=True, check=True)
    try:
        row = conn.execute("SELECT result, missed_count FROM messenger.reap_call_timeouts(batch_size => 10000)").fetchone()
        assert row == ("failed", len(due) - len(on_stopped))
        sqlstate, message = last_runs(conn)[0][4:]
        assert sqlstate == "08000" and f"{host}:{port}" in message
    finally:
        subprocess.run(start.format(host=host, port=port), shell=True, check=True)
    for _ in range(60):
        try:
            with connect(worker_dsn(host, port)):
                break
        except psycopg.OperationalError:
            time.sleep(0.5)
    row = conn.execute("SELECT result, missed_count FROM messenger.reap_call_timeouts(batch_size => 10000)").fetchone()
    assert row == ("completed", len(on_stopped))
    assert_exactly_once(conn, missed=due)


def test_shards_on_the_coordinator_fail_the_run_by_name_while_the_workers_are_reaped(conn):
    due = insert_calls(conn, 2000)
    host, port = workers(conn)[0]
    shard = conn.execute(
        "SELECT s.shardid FROM pg_dist_shard AS s JOIN pg_dist_placement AS p USING (shardid)"
        "  JOIN pg_dist_node AS n USING (groupid)"
        " WHERE s.logicalrelid = 'messenger.call_sessions'::regclass AND n.nodeport = %s"
        " ORDER BY s.shardid LIMIT 1", (port,)).fetchone()[0]
    coord_host, coord_port = conn.execute("SELECT nodename, nodeport FROM pg_dist_node WHERE groupid = 0").fetchone()
    on_coordinator = [i for i, w in placements(conn, due).items() if w[0] == shard]
    conn.execute("SELECT citus_set_node_property(%s, %s, 'shouldhaveshards', true)", (coord_host, coord_port))
    conn.execute("SELECT citus_move_shard_placement(%s, %s, %s, %s, %s, shard_transfer_mode => 'block_writes')",
                 (shard, host, port, coord_host, coord_port))
    try:
        row = conn.execute("SELECT result, missed_count FROM messenger.reap_call_timeouts(batch_size => 10000)").fetchone()
        assert row == ("failed", len(due) - len(on_coordinator))
        assert "the coordinator holds 1 shards" in last_runs(conn)[0][5]
        assert_exactly_once(conn, missed=[i for i in due if i not in set(on_coordinator)], live=on_coordinator)
    finally:
        conn.execute("SELECT citus_move_shard_placement(%s, %s, %s, %s, %s, shard_transfer_mode => 'block_writes')",
                     (shard, coord_host, coord_port, host, port))
        conn.execute("SELECT citus_set_node_property(%s, %s, 'shouldhaveshards', false)", (coord_host, coord_port))
        conn.execute("CALL citus_cleanup_orphaned_resources()")
    assert conn.execute("SELECT result, missed_count FROM messenger.reap_call_timeouts(batch_size => 10000)"
                        ).fetchone() == ("completed", len(on_coordinator))
    assert_exactly_once(conn, missed=due)


@pytest.mark.parametrize("mode", ["block_writes", "force_logical"])
def test_a_shard_move_during_a_drain_closes_and_pushes_every_call_exactly_once(conn, mode):
    if mode == "force_logical" and conn.execute("SHOW wal_level").fetchone()[0] != "logical":
        raise pytest.UsageError("the logical shard move needs wal_level = logical on every node")
    due = insert_calls(conn, 30000)
    (src_host, src_port), (dst_host, dst_port) = workers(conn)[:2]
    moving = conn.execute(
        "SELECT s.shardid FROM pg_dist_shard AS s JOIN pg_dist_placement AS p USING (shardid)"
        "  JOIN pg_dist_node AS n USING (groupid)"
        " WHERE s.logicalrelid = 'messenger.call_sessions'::regclass AND n.nodeport = %s"
        " ORDER BY s.shardid LIMIT 2", (src_port,)).fetchall()
    # A dispatcher beside it: every outbox row id it ever read, per (call, kind, target). A push
    # read from a placement that a move then left, and written again later, shows as two ids.
    seen: dict[tuple, set[int]] = {}
    stop = threading.Event()
    errors: list[BaseException] = []

    def dispatcher():
        try:
            with connect() as d:
                while not stop.is_set():
                    for ref, kind, target, oid in d.execute(
                            "SELECT reference_id, kind, target_id, id FROM messenger.realtime_outbox"):
                        seen.setdefault((ref, kind, target), set()).add(oid)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    moved_all = threading.Event()

    def drain():
        # Small batches, so the drain is still closing calls while the moves run; it ends at
        # the first cycle after the moves that closed nothing.
        try:
            with connect() as d:
                while True:
                    done = moved_all.is_set()
                    closed = d.execute("SELECT missed_count FROM messenger.reap_call_timeouts(batch_size => 20)").fetchone()[0]
                    if done and closed == 0:
                        break
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=dispatcher), threading.Thread(target=drain)]
    for t in threads:
        t.start()
    try:
        time.sleep(0.5)
        with connect() as m:
            for (shard,) in moving:
                m.execute("SELECT citus_move_shard_placement(%s, %s, %s, %s, %s, shard_transfer_mode => %s)",
                          (shard, src_host, src_port, dst_host, dst_port, mode))
            left = m.execute("SELECT count(*) FROM messenger.call_sessions WHERE status = 'Ringing'").fetchone()[0]
    finally:
        moved_all.set()
        threads[1].join()
        stop.set()
        threads[0].join()
    assert not errors, errors
    assert left > 0, "the drain ended before the moves did: nothing ran beside them"
    conn.execute("CALL messenger.drain_call_timeouts(batch_size => 1000)")
    assert_exactly_once(conn, missed=due)
    twice = {k: v for k, v in seen.items() if len(v) > 1}
    assert not twice, f"{len(twice)} pushes read with two ids, e.g. {list(twice.items())[:3]}"
    moved = conn.execute("SELECT count(*) FROM pg_dist_placement AS p JOIN pg_dist_node AS n USING (groupid)"
                         " WHERE p.shardid = ANY(%s) AND n.nodeport = %s",
                         ([s for (s,) in moving], dst_port)).fetchone()[0]
    assert moved == len(moving)
    with connect() as m:  # leave the cluster as found
        m.execute("CALL citus_cleanup_orphaned_resources()")
        for (shard,) in moving:
            m.execute("SELECT citus_move_shard_placement(%s, %s, %s, %s, %s, shard_transfer_mode => 'block_writes')",
                      (shard, dst_host, dst_port, src_host, src_port))
        m.execute("CALL citus_cleanup_orphaned_resources()")


PGBENCH_SCRIPT = """
\\set a random(1, 20000)
\\set b random(1, 20000)
\\set c random(1, 20000)
INSERT INTO messenger.call_sessions (call_id, caller_user_id, callee_user_id, media_type, status, started_at, updated_at)
VALUES (md5(:a || 'pgbench')::uuid, gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing', now() - interval '40 seconds' * random(), now())
ON CONFLICT (call_id) DO NOTHING;
UPDATE messenger.call_sessions SET status = 'Answered', answered_at = now(), updated_at = now()
 WHERE call_id = md5(:b || 'pgbench')::uuid AND status = 'Ringing';
UPDATE messenger.call_sessions SET status = 'Ended', end_reason = 'Hangup', ended_at = now(), updated_at = now(),
       duration_seconds = greatest(0, extract(epoch FROM now() - answered_at))::int
 WHERE call_id = md5(:c || 'pgbench')::uuid AND status = 'Answered';
"""


def test_exactly_once_under_a_pgbench_product_load_with_the_scheduled_job(conn):
    pgbench = os.environ.get("PGBENCH") or shutil.which("pgbench") or "/usr/lib/postgresql/15/bin/pgbench"
    old = conn.execute("SELECT ring_timeout FROM messenger.call_reaper_settings").fetchone()[0]
    conn.execute("UPDATE messenger.call_reaper_settings SET ring_timeout = '30 seconds'")
    began = conn.execute("SELECT clock_timestamp()").fetchone()[0]
    conn.execute("SELECT messenger.resume_call_reaper()")
    try:
        with tempfile.NamedTemporaryFile("w", suffix=".sql") as script:
            script.write(PGBENCH_SCRIPT)
            script.flush()
            run = subprocess.run([pgbench, "-n", "-c", "4", "-j", "2", "-T", "75", "-f", script.name],
                                 env=libpq_env(), capture_output=True, text=True, check=False)
            assert run.returncode == 0, run.stderr
    finally:
        conn.execute("SELECT messenger.pause_call_reaper()")
        conn.execute("UPDATE messenger.call_reaper_settings SET ring_timeout = %s", (old,))
    runs = conn.execute("SELECT count(*), coalesce(sum(missed_count), 0) FROM messenger.call_reaper_runs"
                        " WHERE started_at > %s AND result = 'completed'", (began,)).fetchone()
    assert runs[0] >= 4 and runs[1] > 0, runs
    # Every call: closed by the reaper with exactly its pushes, or by the product with none of
    # the reaper's; a call both answered and missed would show here.
    bad = conn.execute(
        "SELECT c.call_id, c.status, count(o.id) FROM messenger.call_sessions AS c"
        "  LEFT JOIN messenger.realtime_outbox AS o ON o.reference_id = c.call_id"
        " GROUP BY c.call_id, c.status"
        " HAVING count(o.id) <> CASE c.status WHEN 'Missed' THEN 1 WHEN 'Failed' THEN 2 ELSE 0 END").fetchall()
    assert not bad, bad[:5]
    by_status = dict(conn.execute("SELECT status, count(*) FROM messenger.call_sessions GROUP BY status").fetchall())
    tps = next((line for line in run.stdout.splitlines() if line.startswith("tps")), "")
    print(f"\nCitus under pgbench (4 clients, 75 s): {runs[0]} scheduled cycles closed {runs[1]} calls;"
          f" calls by status {by_status}; {tps}")
    assert by_status.get("Ended", 0) > 0 and by_status.get("Missed", 0) > 0


def test_the_scheduled_job_closes_ringing_calls_within_ring_timeout_plus_its_interval(conn):
    ring, slack = 5, 3
    old, interval = conn.execute(
        "SELECT ring_timeout, extract(epoch FROM polling_interval)::float8 FROM messenger.call_reaper_settings").fetchone()
    conn.execute("UPDATE messenger.call_reaper_settings SET ring_timeout = make_interval(secs => %s)", (ring,))
    conn.execute("SELECT messenger.resume_call_reaper()")
    ids: list[uuid.UUID] = []
    try:
        for _ in range(12):  # spread over three intervals
            ids += insert_calls(conn, 50, age="0 seconds")
            time.sleep(interval / 4)
        deadline = time.monotonic() + ring + interval + slack + 5
        while time.monotonic() < deadline and conn.execute(
                "SELECT count(*) FROM messenger.call_sessions WHERE call_id = ANY(%s) AND status = 'Ringing'",
                (ids,)).fetchone()[0]:
            time.sleep(1)
        lags = [r[0] for r in conn.execute(
            "SELECT extract(epoch FROM ended_at - (started_at + make_interval(secs => %s)))::float8"
            "  FROM messenger.call_sessions WHERE call_id = ANY(%s)", (ring, ids))]
    finally:
        conn.execute("SELECT messenger.pause_call_reaper()")
        conn.execute("UPDATE messenger.call_reaper_settings SET ring_timeout = %s", (old,))
    assert len(lags) == len(ids) and None not in lags, "a call was not closed by the scheduled job"
    print(f"\nCitus SLO lag after ring_timeout ({len(lags)} calls, interval {interval:g} s):"
          f" median {statistics.median(lags):.2f} s, max {max(lags):.2f} s")
    assert max(lags) <= interval + slack
    assert_exactly_once(conn, missed=ids)
