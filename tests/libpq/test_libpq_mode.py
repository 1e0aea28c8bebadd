"""pg_cron in libpq mode (cron.use_background_workers = off, pg_cron's default and what Azure
fixes): every job connects over libpq to cron.host as its own user, so the job role needs an
authentication rule, and a job that cannot connect must be loud, not silently scheduled.

scripts/test-in-cluster runs this file (SUITE=libpq) in a cluster of its own started with
cron.use_background_workers = off and cron.host = the server's socket directory, with the
reaper deployed and no rule for the job role yet. In order:
1. without a rule, the reaper's job fails on every run ('connection failed'), a due call stays
   Ringing, and call_reaper_status() and call_reaper_metrics() (the exporter's
   job_failing, alert CallReaperJobFailing, promtool-tested) say so;
2. with the documented rule (docs/scheduling.md "pg_cron in libpq mode": a peer map from the server's OS user to
   messenger_call_reaper on the socket), the scheduled job closes the due call with its push
   and the deployer's warden job runs.
"""

from __future__ import annotations

import os
import pwd
import sys
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
from reaper_facts import JOB_NAME, JOB_ROLE, WARDEN_JOB_NAME
from reaper_support import (
    Calls,
    assert_all_or_nothing,
    call_rows,
    delete_calls,
    ringing,
    wait_for,
)

DB = "messenger"
MINUTE_AND_A_TICK = 80.0    # pg_cron 1.4 starts the job at each minute; 1.5+ every 15 s
POLL_S = 0.5                # the waits are for pg_cron's runs


@pytest.fixture(scope="module")
def conn():
    with psycopg.connect("", dbname=DB, autocommit=True) as c:
        settings = dict(c.execute(
            "SELECT name, setting FROM pg_settings WHERE name IN ('cron.use_background_workers', 'cron.host')"))
        assert settings.get("cron.use_background_workers") == "off", \
            "run me in a cluster with cron.use_background_workers = off (scripts/test-in-cluster SUITE=libpq)"
        c.execute("SELECT messenger.resume_call_reaper()")
        yield c


@pytest.fixture(scope="module")
def due_call(conn):
    calls = Calls(conn)
    start = conn.execute("SELECT clock_timestamp()").fetchone()[0]
    (call,) = calls.add([ringing(start - timedelta(minutes=5))])
    yield call
    delete_calls(conn, calls.ids)


def last_run(conn) -> int:
    """Runs are told apart by runid: a run that never connected has no start_time."""
    return conn.execute("SELECT coalesce(max(runid), 0) FROM cron.job_run_details").fetchone()[0]


def runs_since(conn, job: str, since: int, status: str) -> int:
    return conn.execute(
        "SELECT count(*) FROM cron.job_run_details AS d JOIN cron.job AS j USING (jobid)"
        " WHERE j.jobname = %s AND d.runid > %s AND d.status = %s", [job, since, status]).fetchone()[0]


def test_without_a_rule_the_job_role_cannot_connect_and_nothing_is_closed(conn, due_call):
    since = last_run(conn)
    message = wait_for(lambda: conn.execute(
        "SELECT max(d.return_message) FROM cron.job_run_details AS d JOIN cron.job AS j USING (jobid)"
        " WHERE j.jobname = %s AND d.runid > %s AND d.status = 'failed'",
        [JOB_NAME, since]).fetchone()[0], MINUTE_AND_A_TICK, f"a failed run of {JOB_NAME}", interval=POLL_S)
    assert "connection failed" in message
    assert runs_since(conn, JOB_NAME, since, "succeeded") == 0
    assert call_rows(conn, [due_call["call_id"]])[due_call["call_id"]]["status"] == "Ringing"
    # Loud where a DBA and Prometheus look, not only in pg_cron's own table.
    (jobs,) = conn.execute("SELECT jobs FROM messenger.call_reaper_status()").fetchone()
    reaper = next(j for j in jobs if j["job"] == JOB_NAME)
    assert (reaper["scheduled"], reaper["last_status"], reaper["last_error"]) == (True, "failed", "connection failed")
    assert conn.execute("SELECT job_failing_reaper FROM messenger.call_reaper_metrics()").fetchone()[0] is True


@pytest.fixture
def peer_rule(conn):
    """The rule of docs/scheduling.md: the server's OS user may log in as the job role on the socket."""
    hba = Path(conn.execute("SHOW hba_file").fetchone()[0])
    ident = Path(conn.execute("SHOW ident_file").fetchone()[0])
    data = conn.execute("SHOW data_directory").fetchone()[0]
    os_user = pwd.getpwuid(os.stat(data).st_uid).pw_name
    saved = hba.read_text(), ident.read_text()
    hba.write_text(f"local {DB} {JOB_ROLE} peer map=call_reaper\n" + saved[0])
    ident.write_text(saved[1] + f"\ncall_reaper {os_user} {JOB_ROLE}\n")
    assert conn.execute("SELECT pg_reload_conf()").fetchone()[0]
    yield
    hba.write_text(saved[0])
    ident.write_text(saved[1])
    conn.execute("SELECT pg_reload_conf()")


def test_with_the_documented_rule_the_job_closes_due_calls_and_the_warden_runs(conn, due_call, peer_rule):
    since = last_run(conn)
    wait_for(lambda: conn.execute("SELECT status = 'Missed' FROM messenger.call_sessions WHERE call_id = %s",
                                  [due_call["call_id"]]).fetchone()[0],
             MINUTE_AND_A_TICK, "the scheduled job to close the due call", interval=POLL_S)
    assert assert_all_or_nothing(conn, [due_call["call_id"]]) == (1, 1)
    assert runs_since(conn, JOB_NAME, since, "failed") == 0
    # The warden's CALL lasts its whole minute; one started since the rule is running or done.
    wait_for(lambda: conn.execute(
             "SELECT count(*) FROM cron.job_run_details AS d JOIN cron.job AS j USING (jobid)"
             " WHERE j.jobname = %s AND d.runid > %s AND d.status IN ('running', 'succeeded')",
             [WARDEN_JOB_NAME, since]).fetchone()[0], MINUTE_AND_A_TICK, f"a run of {WARDEN_JOB_NAME}",
             interval=POLL_S)
    assert runs_since(conn, WARDEN_JOB_NAME, since, "failed") == 0
    assert conn.execute("SELECT job_failing_warden FROM messenger.call_reaper_metrics()").fetchone()[0] is not True


def test_runs_that_never_connected_are_purged_once_a_later_run_ended(conn):
    # The first test's failures: pg_cron wrote them without a start or end time, which no
    # retention by time ever reached.
    never_started = ("SELECT max(d.runid) FROM cron.job_run_details AS d JOIN cron.job AS j USING (jobid)"
                     " WHERE j.jobname = %s AND d.status = 'failed' AND d.start_time IS NULL AND d.end_time IS NULL")
    (last_failure,) = conn.execute(never_started, [JOB_NAME]).fetchone()
    assert last_failure is not None
    # pg_cron numbers a run before it starts: one numbered after the last failure that has ended
    # tells the purge those failures are older than the cutoff (on pg_cron 1.4 a CALL lasts its minute).
    wait_for(lambda: conn.execute("SELECT count(*) FROM cron.job_run_details WHERE runid > %s AND end_time IS NOT NULL",
                                  [last_failure]).fetchone()[0],
             MINUTE_AND_A_TICK, "a run numbered after the failures to end", interval=POLL_S)
    # As of one retention from now, so that the cutoff is now: every run that has ended is older.
    (retention,) = conn.execute("SELECT retention FROM messenger.call_reaper_settings").fetchone()
    (purged,) = conn.execute("SELECT job_run_details_purged FROM messenger.purge_call_reaper_history("
                             "as_of => clock_timestamp() + %s)", [retention]).fetchone()
    assert purged > 0
    assert conn.execute(never_started, [JOB_NAME]).fetchone() == (None,)
