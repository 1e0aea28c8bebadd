"""The relation-pair cycle beside the product: messenger._reap_pair on a second pair (a shard's
shape, made LIKE the default tables in a schema of its own) skips a call another session holds
(FOR NO KEY UPDATE SKIP LOCKED: never waits for it) and closes it in a later run, once, with
exactly its outbox row. Run by a DBA's own login holding only the operator role (the fan-out's
caller), never by the job role.

"Never waits" needs no stopwatch: the run has a lock_timeout, so a wait on the held row would
raise 55P03 instead of returning.
"""

import secrets
import uuid
from datetime import timedelta

import psycopg
import pytest
from psycopg import sql
from reaper_facts import JOB_ROLE, OPERATOR_ROLE, OWNER_ROLE
from reaper_support import FUTURE

AS_OF = FUTURE
PAIR_RUN = sql.SQL(
    "SELECT * FROM messenger._reap_pair({calls}::regclass, {outbox}::regclass, gen_random_uuid(), %s,"
    " (SELECT to_jsonb(s) FROM messenger.call_reaper_settings AS s), 63, NULL)")


@pytest.fixture
def pair(conn):
    """A second pair (calls, outbox) with the owner's grants on the default pair; dropped after."""
    schema = f"pair_{secrets.token_hex(4)}"
    ident = sql.Identifier(schema)
    for stmt in (
        "CREATE SCHEMA {s}",
        "CREATE TABLE {s}.calls (LIKE messenger.call_sessions INCLUDING ALL)",
        "CREATE TABLE {s}.outbox (LIKE messenger.realtime_outbox INCLUDING ALL)",
        "GRANT USAGE ON SCHEMA {s} TO {owner}, {operator}",
        "GRANT SELECT, UPDATE (status, end_reason, ended_at, updated_at, duration_seconds) ON {s}.calls TO {owner}",
        "GRANT INSERT ON {s}.outbox TO {owner}",
    ):
        conn.execute(sql.SQL(stmt).format(s=ident, owner=sql.Identifier(OWNER_ROLE),
                                          operator=sql.Identifier(OPERATOR_ROLE)))
    seq = conn.execute("SELECT pg_get_serial_sequence(%s, 'id')", [f"{schema}.outbox"]).fetchone()[0]
    conn.execute(sql.SQL("GRANT USAGE ON SEQUENCE {} TO {}").format(sql.SQL(seq), sql.Identifier(OWNER_ROLE)))
    try:
        yield schema
    finally:
        conn.execute("DELETE FROM messenger.call_reaper_quarantine AS q"
                     f" WHERE EXISTS (SELECT FROM {schema}.calls AS c WHERE c.call_id = q.call_id)")
        conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(ident))


def run_pair(connection, schema):
    query = PAIR_RUN.format(calls=sql.Literal(f"{schema}.calls"), outbox=sql.Literal(f"{schema}.outbox"))
    with connection.cursor(row_factory=psycopg.rows.dict_row) as cur:
        return cur.execute(query, [AS_OF]).fetchone()


def test_a_held_call_of_a_second_pair_is_skipped_and_closed_by_a_later_run(conn, pair, make_conn,
                                                                          operator_login):
    # pair before make_conn: the product's connection closes (its row lock goes) before the
    # pair is dropped, even when an assertion fails while it holds the lock.
    held, free = uuid.uuid4(), uuid.uuid4()
    for call_id, minutes in ((held, 3), (free, 2)):
        conn.execute(f"INSERT INTO {pair}.calls (call_id, caller_user_id, callee_user_id, media_type, status,"
                     " started_at, updated_at) VALUES (%s, gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing', %s, %s)",
                     [call_id, AS_OF - timedelta(minutes=minutes), AS_OF - timedelta(minutes=minutes)])
    default_outbox = conn.execute("SELECT count(*) FROM messenger.realtime_outbox").fetchone()[0]

    product = make_conn(autocommit=False)   # e.g. answer-call, not committed yet
    product.execute(f"SELECT FROM {pair}.calls WHERE call_id = %s FOR UPDATE", [held])
    operator_login.execute("SET lock_timeout = '10s'")

    first = run_pair(operator_login, pair)
    assert (first["missed_count"], first["skipped_locked_count"]) == (1, 1)
    product.rollback()
    second = run_pair(operator_login, pair)
    assert (second["missed_count"], second["skipped_locked_count"]) == (1, 0)
    third = run_pair(operator_login, pair)
    assert (third["missed_count"], third["skipped_locked_count"]) == (0, 0)

    rows = conn.execute(f"SELECT call_id, status FROM {pair}.calls").fetchall()
    assert sorted(rows) == sorted([(held, "Missed"), (free, "Missed")])
    pushes = conn.execute(f"SELECT reference_id, kind FROM {pair}.outbox ORDER BY id").fetchall()
    assert pushes == [(free, "CallMissed"), (held, "CallMissed")], "each call closed once, with exactly its row"
    assert conn.execute("SELECT count(*) FROM messenger.realtime_outbox").fetchone()[0] == default_outbox


def test_the_job_role_may_not_run_a_pair(login):
    # The default pair and no settings row: the only thing refused is EXECUTE on _reap_pair.
    with login(JOB_ROLE) as job, pytest.raises(psycopg.errors.InsufficientPrivilege):
        job.execute("SELECT * FROM messenger._reap_pair('messenger.call_sessions', 'messenger.realtime_outbox',"
                    " gen_random_uuid(), %s, NULL::jsonb, 63, NULL)", [AS_OF])
