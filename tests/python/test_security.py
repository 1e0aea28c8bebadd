"""Security as the roles meet it: what each role is refused when it logs in, that a caller's
search_path cannot redirect the reaper, and that what it writes and logs carries ids only.
The grants themselves (owners, EXECUTE, table and column privileges, role attributes) are
listed once, in tests/pgtap/privileges.sql.

Logins are real (a password set for the test and removed after), not SET ROLE, so role
attributes and pg_hba are exercised as the job and the exporter would meet them.
"""

import json
import re
import secrets
import uuid
from datetime import timedelta

import pytest
from psycopg import errors, sql
from reaper_facts import JOB_NAME, JOB_ROLE, MONITOR_ROLE, OPERATOR_ROLE, OWNER_ROLE
from reaper_support import (
    FUTURE,
    STALE,
    answered,
    assert_all_or_nothing,
    call_rows,
    job,
    outbox_rows,
    reap,
    ringing,
)

AS_OF = FUTURE

TABLES = ["call_sessions", "realtime_outbox", "call_reaper_settings", "call_reaper_runs",
          "call_reaper_counters", "call_reaper_quarantine", "call_reaper_claim_floor"]


def executable_routines(conn, role):
    return {r[0] for r in conn.execute(
        "SELECT p.proname FROM pg_catalog.pg_proc p"
        " WHERE p.pronamespace = 'messenger'::regnamespace"
        "   AND pg_catalog.has_function_privilege(%s, p.oid, 'EXECUTE')", [role])}


@pytest.fixture
def stranger(conn):
    """A plain login role with no grants at all."""
    name = f"reaper_test_stranger_{secrets.token_hex(4)}"
    conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(name)))
    yield name
    conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))


# ---- PUBLIC, the job role, the monitor role, the owner ----

def test_public_cannot_execute_the_reaper(conn, stranger, login):
    with login(stranger) as c, pytest.raises(errors.InsufficientPrivilege):
        c.execute("SELECT * FROM messenger.reap_call_timeouts(as_of => %s)", [AS_OF])


def test_job_role_runs_the_reaper_and_nothing_else(conn, login, calls, reaper_paused):
    """It may run the configured cycle (here paused, so it closes nothing: test_job_credential.py
    has the rest of that rule) and touch no table at all."""
    (call,) = calls.add([ringing(AS_OF - timedelta(minutes=1))])
    with login(JOB_ROLE) as job_conn:
        assert reap(job_conn)["result"] == "paused"
        for table in TABLES:
            for statement in (f"SELECT * FROM messenger.{table}",
                              f"UPDATE messenger.{table} SET {first_column(conn, table)} = NULL",
                              f"DELETE FROM messenger.{table}",
                              f"TRUNCATE messenger.{table}"):
                with pytest.raises(errors.InsufficientPrivilege):
                    job_conn.execute(statement)
    assert call_rows(conn, [call["call_id"]])[call["call_id"]]["status"] == "Ringing"


def test_job_role_cannot_touch_its_job_or_purge_history(conn, login):
    """Issue 10, reproduction 2: as messenger_call_reaper, every way to stop, rewrite or add
    a job, to pause or resume it, and every purge, fails with 42501; the job and the history
    are unchanged."""
    before = job(conn)
    assert before is not None, f"pg_cron job {JOB_NAME} is not scheduled"
    jobs_before = conn.execute("SELECT count(*) FROM cron.job").fetchone()[0]
    ledger_before = conn.execute("SELECT count(*) FROM messenger.call_reaper_runs").fetchone()[0]
    paused_before = conn.execute("SELECT paused FROM messenger.call_reaper_settings").fetchone()[0]
    attempts = [
        ("SELECT cron.unschedule(%s)", [JOB_NAME]),
        ("SELECT cron.unschedule(%s::bigint)", [before["jobid"]]),
        ("SELECT cron.schedule(%s, '* * * * *', 'SELECT 1')", [JOB_NAME]),
        ("SELECT cron.schedule('reaper-test-own-job', '* * * * *', 'SELECT 1')", []),
        ("SELECT cron.alter_job(%s, active => false)", [before["jobid"]]),
        ("SELECT * FROM cron.job", []),
        ("SELECT * FROM messenger.purge_call_reaper_history(as_of => '9999-12-31')", []),
        ("SELECT * FROM messenger._purge_call_reaper_runs('9999-12-31', 1000000)", []),
        ("SELECT messenger.pause_call_reaper()", []),
        ("UPDATE messenger.call_reaper_settings SET paused = true", []),
        ("SELECT messenger.resume_call_reaper()", []),
        ("UPDATE messenger.call_reaper_settings SET paused = false", []),
    ]
    with login(JOB_ROLE) as job_conn:
        for statement, args in attempts:
            with pytest.raises(errors.InsufficientPrivilege):
                job_conn.execute(statement, args)
    assert job(conn) == before, "the job is unchanged"
    assert conn.execute("SELECT count(*) FROM cron.job").fetchone()[0] == jobs_before
    assert conn.execute("SELECT count(*) FROM messenger.call_reaper_runs").fetchone()[0] >= ledger_before
    assert conn.execute("SELECT paused FROM messenger.call_reaper_settings").fetchone()[0] == paused_before


def first_column(conn, table):
    """A column an UPDATE may name (identity columns refuse before privileges are checked)."""
    return conn.execute(
        "SELECT attname FROM pg_catalog.pg_attribute WHERE attrelid = %s::regclass"
        " AND attnum > 0 AND attidentity = '' ORDER BY attnum LIMIT 1",
        [f"messenger.{table}"]).fetchone()[0]


def test_monitor_role_reads_counters_only(conn, login):
    # Counters reach it through SECURITY DEFINER functions, never through table grants
    # (tests/pgtap/privileges.sql lists them).
    routines = executable_routines(conn, MONITOR_ROLE)
    with login(MONITOR_ROLE) as mon:
        for table in TABLES:
            with pytest.raises(errors.InsufficientPrivilege):
                mon.execute(f"SELECT * FROM messenger.{table}")
        with pytest.raises(errors.InsufficientPrivilege):
            mon.execute("SELECT * FROM messenger.reap_call_timeouts(as_of => %s)", [AS_OF])
        # Whatever read function it has (the exporter's metrics), it must be read-only.
        for name in sorted(routines):
            no_args = conn.execute(
                "SELECT p.oid::regprocedure::text FROM pg_catalog.pg_proc p"
                " WHERE p.pronamespace = 'messenger'::regnamespace AND p.proname = %s"
                "   AND p.pronargs = p.pronargdefaults", [name]).fetchone()
            if no_args:
                with mon.transaction():
                    mon.execute("SET TRANSACTION READ ONLY")
                    mon.execute(sql.SQL("SELECT * FROM messenger.{}()").format(sql.Identifier(name)))


# ---- A caller's search_path cannot redirect the reaper ----

@pytest.fixture
def shadow(conn):
    """Schema `shadow` full of look-alikes that record it if anything resolves to them."""
    conn.execute("CREATE SCHEMA shadow")
    conn.execute("CREATE TABLE shadow.hits (what text)")
    conn.execute(f"GRANT USAGE ON SCHEMA shadow TO {OPERATOR_ROLE}")
    conn.execute(f"GRANT INSERT, SELECT ON shadow.hits TO {OPERATOR_ROLE}, {OWNER_ROLE}")
    conn.execute(f"GRANT USAGE ON SCHEMA shadow TO {OWNER_ROLE}")
    for table in TABLES:
        conn.execute(f"CREATE TABLE shadow.{table} (LIKE messenger.{table})")
        conn.execute(f"GRANT ALL ON shadow.{table} TO {OPERATOR_ROLE}, {OWNER_ROLE}")
    # Functions named like the pg_catalog ones the reaper calls unqualified.
    for name, args, returns, value in [
        ("pg_try_advisory_xact_lock", "bigint", "boolean", "true"),
        ("gen_random_uuid", "", "uuid", "'00000000-0000-0000-0000-000000000000'::uuid"),
        ("clock_timestamp", "", "timestamptz", "'2000-01-01'::timestamptz"),
        ("set_config", "text, text, boolean", "text", "''"),
        ("coalesce", "integer, integer", "integer", "1"),
    ]:
        conn.execute(
            f"CREATE FUNCTION shadow.{name}({args}) RETURNS {returns} LANGUAGE plpgsql AS $$"
            f" BEGIN INSERT INTO shadow.hits VALUES ('{name}'); RETURN {value}; END $$")
        conn.execute(f"GRANT EXECUTE ON FUNCTION shadow.{name}({args}) TO PUBLIC")
    conn.execute("CREATE FUNCTION shadow.\"=\"(uuid, uuid) RETURNS boolean LANGUAGE sql"
                 " AS 'SELECT false'")
    conn.execute("CREATE OPERATOR shadow.= (LEFTARG = uuid, RIGHTARG = uuid,"
                 " FUNCTION = shadow.\"=\")")
    yield
    conn.execute("DROP SCHEMA shadow CASCADE")


def test_callers_search_path_cannot_redirect_the_reaper(conn, operator_login, calls, shadow,
                                                        reaper_paused):
    """As an operator (the job role may not pass as_of; its search_path is the same risk)."""
    rows = calls.add([ringing(AS_OF - timedelta(minutes=1)),
                      answered(AS_OF - STALE - timedelta(minutes=1))])
    ids = [r["call_id"] for r in rows]
    with operator_login as c:
        # Temp tables named like the reaper's, first in the path, then the shadow schema
        # ahead of pg_catalog.
        for table in TABLES:
            c.execute(f"CREATE TEMP TABLE {table} (LIKE shadow.{table})")
        c.execute("SET search_path = pg_temp, shadow, messenger, pg_catalog, public")
        result = reap(c, as_of=AS_OF)
        assert result["run_id"] != uuid.UUID(int=0)
        assert (result["lock_acquired"], result["missed_count"], result["failed_count"]) == \
            (True, 1, 1)
        for table in TABLES:
            assert c.execute(f"SELECT count(*) FROM pg_temp.{table}").fetchone()[0] == 0
    assert conn.execute("SELECT array_agg(what) FROM shadow.hits").fetchone()[0] is None
    for table in TABLES:
        assert conn.execute(f"SELECT count(*) FROM shadow.{table}").fetchone()[0] == 0
    assert assert_all_or_nothing(conn, ids) == (2, 3)


# ---- What it writes and logs: ids only ----

def test_outbox_payloads_have_exactly_the_three_keys(conn, calls, reaper_paused):
    rows = calls.add([ringing(AS_OF - timedelta(minutes=1), media_type="Video"),
                      answered(AS_OF - STALE - timedelta(minutes=1), media_type="Audio")])
    reap(conn, as_of=AS_OF)
    pushed = outbox_rows(conn, [r["call_id"] for r in rows])
    assert len(pushed) == 3
    by_id = {r["call_id"]: r for r in rows}
    for row in pushed:
        call = by_id[row["reference_id"]]
        assert row["payload"] == {
            "callId": str(call["call_id"]),
            "status": "Missed" if call["status"] == "Ringing" else "Failed",
            "mediaType": call["media_type"],
        }
    # That the table refuses anything more is the service's CHECK: tests/stand-in/service_tables.sql.


UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
VALUE = re.compile(
    rf"^(?:{UUID}|-?\d+(?:\.\d+)?|[A-Za-z_]+|[0-9A-Z]{{5}}"
    r"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d(?::\d\d)?))$")
PAIR = re.compile(r'([a-z_]+)=("(?:[^"\\]|\\.)*"|\S+)')


def parse_log_line(line):
    """key=value pairs of one reaper log line; fails on anything else."""
    assert line.startswith("call_reaper "), line
    rest = line[len("call_reaper "):]
    pairs = PAIR.findall(rest)
    assert " ".join(f"{k}={v}" for k, v in pairs) == rest, f"not key=value: {line!r}"
    return dict(pairs)


def test_logs_are_key_value_with_ids_only(conn, make_conn, calls, reaper_paused):
    """Every event the reaper logs, captured from the client side (client_min_messages =
    log shows RAISE LOG to the session); a poison trigger's DETAIL carries fake PII."""
    good = calls.add([ringing(AS_OF - timedelta(minutes=2)),
                      answered(AS_OF - STALE - timedelta(minutes=1))])
    bad = calls.add([ringing(AS_OF - timedelta(minutes=1))])[0]
    conn.execute(sql.SQL("""
        CREATE FUNCTION public.reaper_log_poison() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.call_id = {} THEN
                RAISE EXCEPTION 'poison "quoted" row' USING DETAIL = 'phone=+15550100 name=Alice';
            END IF;
            RETURN NEW;
        END $$""").format(sql.Literal(bad["call_id"])))
    conn.execute("CREATE TRIGGER reaper_log_poison BEFORE UPDATE ON messenger.call_sessions"
                 " FOR EACH ROW EXECUTE FUNCTION public.reaper_log_poison()")
    lines = []
    try:
        c = make_conn()
        c.add_notice_handler(lambda d: lines.append(d.message_primary))
        c.execute("SET client_min_messages = debug1")   # the per-phase records are at DEBUG
        reap(c, as_of=AS_OF)
        # A cycle that fails whole (its poison call cannot even be quarantined) ...
        conn.execute("DELETE FROM messenger.call_reaper_quarantine WHERE call_id = %s",
                     [bad["call_id"]])
        conn.execute("""
            CREATE FUNCTION public.reaper_log_no_quarantine() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'no quarantine today' USING DETAIL = 'name=Alice'; END $$""")
        conn.execute("CREATE TRIGGER reaper_log_no_quarantine BEFORE INSERT"
                     " ON messenger.call_reaper_quarantine FOR EACH ROW"
                     " EXECUTE FUNCTION public.reaper_log_no_quarantine()")
        assert reap(c, as_of=AS_OF)["result"] == "failed"
        # ... and one skipped because the lock is busy.
        holder = make_conn(autocommit=False)
        reap(holder, as_of=AS_OF)
        assert reap(c, as_of=AS_OF)["result"] == "skipped"
        holder.rollback()
    finally:
        conn.execute("DROP TRIGGER IF EXISTS reaper_log_no_quarantine"
                     " ON messenger.call_reaper_quarantine")
        conn.execute("DROP FUNCTION IF EXISTS public.reaper_log_no_quarantine()")
        conn.execute("DROP TRIGGER IF EXISTS reaper_log_poison ON messenger.call_sessions")
        conn.execute("DROP FUNCTION IF EXISTS public.reaper_log_poison()")

    reaper_lines = [line for line in lines if line.startswith("call_reaper ")]
    events = {parse_log_line(line)["event"] for line in reaper_lines}
    assert {"cycle_started", "batch_selected", "calls_reaped", "call_poisoned",
            "cycle_completed", "cycle_rolled_back", "cycle_skipped"} <= events
    known_ids = {str(v) for r in good + [bad] for v in
                 (r["call_id"], r["caller_user_id"], r["callee_user_id"])}
    for line in reaper_lines:
        assert "Alice" not in line and "15550100" not in line, line
        for key, value in parse_log_line(line).items():
            if key == "message":
                # The error's primary message only, quoted: never its DETAIL.
                assert value.startswith('"') and value.endswith('"'), line
                json.loads(value)
                continue
            if key in ("calls", "calls_missed", "calls_failed"):
                # call_id/caller/callee of every closed call, comma-separated: ids only.
                for call in value.split(",") if value != "none" else []:
                    assert [u in known_ids for u in call.split("/")] == [True] * 3, line
                continue
            assert VALUE.match(value), f"{key}={value} in {line!r}"
            if re.fullmatch(UUID, value) and key != "run_id":
                assert value in known_ids, f"{key}={value} is none of this test's ids"
