"""The job's credential runs the configured cycle and nothing else; an operator runs the rest.

messenger_call_reaper is what pg_cron runs and what every replica of an app-side loop logs in
as. Its password in the wrong hands must not close live calls early or run through a pause:
every batch size, timeout or as_of it passes, on every entry point, is refused with 42501 and
changes nothing, and while the reaper is paused its cycle closes nothing. The DBA verbs with
arguments stay with the deploying role and with members of messenger_call_reaper_operator, which
need no right on the product's tables. The rule lives in messenger._reap_cycle, which every
entry point runs.

Real logins (conftest.login), not SET ROLE, except where SET ROLE is the thing tried.
"""

from datetime import datetime, timedelta

import psycopg
import pytest
from psycopg import errors, sql
from reaper_facts import JOB_ROLE, OPERATOR_ROLE
from reaper_support import (
    FUTURE,
    answered,
    assert_all_or_nothing,
    call_rows,
    job,
    outbox_rows,
    reap,
    ringing,
)

AS_OF = FUTURE
ONE_US = "1 microsecond"

# Every way the job role could steer a cycle: each argument of the public function, by name and
# by position (the reproduction: every live call closed with a push to every user), the private
# cycle the tick procedure chains, the tick procedure's as_of, and the drain.
OVERRIDES = [
    ("SELECT * FROM messenger.reap_call_timeouts(10000, %s, %s)", [ONE_US, ONE_US]),
    ("SELECT * FROM messenger.reap_call_timeouts(batch_size => 10000)", []),
    ("SELECT * FROM messenger.reap_call_timeouts(ring_timeout => %s)", [ONE_US]),
    ("SELECT * FROM messenger.reap_call_timeouts(stale_timeout => %s)", [ONE_US]),
    ("SELECT * FROM messenger.reap_call_timeouts(as_of => %s)", [AS_OF]),
    ("SELECT * FROM messenger._reap_cycle(NULL, %s, NULL, NULL, NULL)", [ONE_US]),
    ("SELECT * FROM messenger._reap_cycle(NULL, NULL, NULL, %s, NULL)", [AS_OF]),
    ("SELECT * FROM messenger._reap_cycle(10000, NULL, NULL, NULL, gen_random_uuid())", []),
    ("CALL messenger.run_call_reaper_ticks(as_of => %s)", [AS_OF]),
    ("CALL messenger.run_call_reaper_ticks(%s)", [AS_OF]),
    ("CALL messenger.drain_call_timeouts(as_of => %s)", [AS_OF]),
    ("CALL messenger.drain_call_timeouts()", []),
]


def now(conn) -> datetime:
    return conn.execute("SELECT clock_timestamp()").fetchone()[0]


def ledger_since(conn, since: datetime) -> int:
    return conn.execute("SELECT count(*) FROM messenger.call_reaper_runs WHERE started_at >= %s",
                        [since]).fetchone()[0]


@pytest.fixture
def job_inactive(conn, reaper_paused):
    """Unpaused, but pg_cron does not launch the job: only the test's own cycles run."""
    jobid = job(conn)["jobid"]
    conn.execute("SELECT cron.alter_job(%s, active => false)", [jobid])
    conn.execute("SELECT messenger.resume_call_reaper()")
    try:
        yield
    finally:
        conn.execute("SELECT messenger.pause_call_reaper()")
        conn.execute("SELECT cron.alter_job(%s, active => true)", [jobid])


def test_job_role_is_refused_every_argument_and_runs_the_configured_cycle(conn, login, calls, job_inactive):
    """Calls live under the configured timeouts (rang 5 s ago, answered 1 minute ago) and a call
    due only in 2100: no override closes any of them. The configured cycle then closes exactly
    the call the configured ring timeout makes due."""
    start = now(conn)
    live = calls.add([ringing(start - timedelta(seconds=5)), answered(start - timedelta(minutes=1)),
                      ringing(AS_OF - timedelta(minutes=1))])
    (due,) = calls.add([ringing(start - timedelta(minutes=5))])
    ids = [c["call_id"] for c in live + [due]]
    before = call_rows(conn, ids)
    with login(JOB_ROLE) as job_conn:
        for statement, args in OVERRIDES:
            with pytest.raises(errors.InsufficientPrivilege) as refused:
                job_conn.execute(statement, args)
            if "_reap_cycle" in statement or "reap_call_timeouts" in statement or "ticks" in statement:
                # The rule's own refusal, which names the way out (the drain has no EXECUTE at all).
                assert OPERATOR_ROLE in (refused.value.diag.message_hint or ""), statement
        assert call_rows(conn, ids) == before, "a refused override changed a call"
        assert outbox_rows(conn, ids) == []
        assert ledger_since(conn, start) == 0, "a refused override ran a cycle"

        cycle = reap(job_conn)
    assert cycle["result"] == "completed" and cycle["lock_acquired"]
    after = call_rows(conn, ids)
    assert after[due["call_id"]]["status"] == "Missed"
    assert {after[c["call_id"]]["status"] for c in live} == {"Ringing", "Answered"}
    assert all(after[c["call_id"]] == before[c["call_id"]] for c in live)
    assert assert_all_or_nothing(conn, ids) == (1, 1)


def test_set_role_to_the_job_role_is_the_job_role(conn):
    """A superuser's session that SET ROLEs to the job role steers nothing either: the caller is
    the session's role, not the SECURITY DEFINER owner."""
    conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(JOB_ROLE)))
    try:
        with pytest.raises(errors.InsufficientPrivilege):
            conn.execute("SELECT * FROM messenger.reap_call_timeouts(as_of => %s)", [AS_OF])
    finally:
        conn.execute("RESET ROLE")


def test_job_role_closes_nothing_while_paused(conn, login, calls, reaper_paused):
    """Paused, the job role's cycle on every entry point closes nothing and takes no lock; a DBA
    running a cycle by hand still closes the call (so it was due)."""
    start = now(conn)
    (due,) = calls.add([ringing(start - timedelta(minutes=5))])
    with login(JOB_ROLE) as job_conn:
        cycle = reap(job_conn)
        assert (cycle["result"], cycle["lock_acquired"], cycle["run_id"], cycle["missed_count"]) == \
            ("paused", False, None, 0)
        assert job_conn.execute(
            "SELECT result FROM messenger._reap_cycle(NULL, NULL, NULL, NULL, NULL)").fetchone()[0] == "paused"
        job_conn.execute("CALL messenger.run_call_reaper_ticks()")
    assert call_rows(conn, [due["call_id"]])[due["call_id"]]["status"] == "Ringing"
    assert outbox_rows(conn, [due["call_id"]]) == []
    assert ledger_since(conn, start) == 0

    assert reap(conn)["missed_count"] >= 1
    assert call_rows(conn, [due["call_id"]])[due["call_id"]]["status"] == "Missed"


def test_operator_runs_the_verbs_with_arguments_without_the_product_tables(conn, operator_login, calls,
                                                                           reaper_paused):
    dba = operator_login
    with pytest.raises(errors.InsufficientPrivilege):
        dba.execute("SELECT count(*) FROM messenger.call_sessions")
    with pytest.raises(errors.InsufficientPrivilege):
        dba.execute("SELECT count(*) FROM messenger.realtime_outbox")

    made = calls.add([ringing(AS_OF - timedelta(minutes=1)), ringing(AS_OF - timedelta(seconds=20)),
                      ringing(AS_OF - timedelta(seconds=10)), ringing(AS_OF - timedelta(seconds=5))])
    ids = [c["call_id"] for c in made]
    assert reap(dba, as_of=AS_OF)["missed_count"] == 1
    assert reap(dba, ring_timeout=timedelta(seconds=15), batch_size=1, as_of=AS_OF)["missed_count"] == 1
    dba.execute("CALL messenger.run_call_reaper_ticks(as_of => %s)", [AS_OF + timedelta(seconds=36)])
    dba.execute("CALL messenger.drain_call_timeouts(ring_timeout => %s, as_of => %s)",
                [timedelta(seconds=1), AS_OF])
    assert {r["status"] for r in call_rows(conn, ids).values()} == {"Missed"}
    assert assert_all_or_nothing(conn, ids) == (4, 4)

    # Not pause_resume.sql again: what is proved here is that the operator role, logged in,
    # runs the verbs (their meaning is tested there).
    assert dba.execute("SELECT messenger.pause_call_reaper()").fetchone()[0] is False  # already paused
    assert dba.execute("SELECT messenger.resume_call_reaper()").fetchone()[0] is True
    assert dba.execute("SELECT messenger.pause_call_reaper()").fetchone()[0] is True
    assert dba.execute("SELECT paused FROM messenger.call_reaper_settings").fetchone()[0] is True
    dba.execute("SELECT count(*) FROM messenger.call_reaper_runs")
    dba.execute("DELETE FROM messenger.call_reaper_quarantine WHERE call_id = %s", [ids[0]])
    # The other options stay the deploying role's: above all the bound on a future as_of.
    with pytest.raises(errors.InsufficientPrivilege):
        dba.execute("UPDATE messenger.call_reaper_settings SET allow_future_as_of = true")
    with pytest.raises(errors.InsufficientPrivilege):
        dba.execute("UPDATE messenger.call_reaper_settings SET batch_size = 10000")


def test_the_job_role_cannot_become_an_operator(conn, login):
    with login(JOB_ROLE) as job_conn:
        with pytest.raises(errors.InsufficientPrivilege):
            job_conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(OPERATOR_ROLE)))
        with pytest.raises(psycopg.Error):
            job_conn.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(OPERATOR_ROLE),
                                                             sql.Identifier(JOB_ROLE)))
