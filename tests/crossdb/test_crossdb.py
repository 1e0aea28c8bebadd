"""pg_cron in another database: cron.database_name = postgres, the product in messenger, and a
second product database (messenger_eu) on the same cluster, each with its own reaper.

scripts/test-in-cluster runs this file (SUITE=crossdb) in a cluster of its own started with
cron.database_name = postgres (Azure's default, Supabase's fixed value), before any other
database exists. Everything is deployed, run and reverted by a role that is not a superuser, as
on those services: CREATEROLE, membership in the tables' owner, pg_signal_backend, USAGE on
schema cron WITH GRANT OPTION, pg_cron created by the provider in postgres. In order:
0. a plain deploy (no cron_database) is refused with a hint that spells the cross-database mode,
   and scheduler=none beside cron_database is refused (22023); neither leaves anything;
1. without the one grant of docs/scheduling.md "pg_cron in another database" (EXECUTE on
   cron.schedule_in_database WITH GRANT OPTION) the deploy is refused with a hint naming it, and leaves nothing;
2. with it, each product database deploys and verifies from itself; pg_cron keeps the jobs in
   postgres, each running in its own database, the first under the fixed job names, the second's
   suffixed with '-messenger_eu';
3. a due call in each is closed by its own database's scheduled job, and only there; a pause in
   one (its settings row) holds while the other's job closes its call; status from each says
   where its jobs are kept;
4. a polling_interval change from a product database: accepted on pg_cron 1.4, refused (55000)
   on 1.5+ where it cannot reschedule;
(Each step asserts what its pg_cron version does: CI runs 1.4, 1.6.7 was run by hand.)
5. the run details of each database's jobs, kept in postgres, are purged there by a job of its
   own past the retention, and no other database's or job's;
6. reverting one product database unschedules its jobs and leaves the other's running.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
from adoption_support import ROOT, cron_extversion, sqitch
from reaper_facts import JOB_NAME, JOB_ROLE, PURGE_JOB_NAME, WARDEN_JOB_NAME
from reaper_support import Calls, call_rows, ringing, wait_for

CRON_DB = "postgres"
FIRST, SECOND = "messenger", "messenger_eu"
DEPLOYER = "reaper_deployer"
PASSWORD = "managed-admin"          # this throwaway cluster only
CROSS_DB = ("--set", f"cron_database={CRON_DB}")
SCHEDULE_IN_DATABASE = "cron.schedule_in_database(text,text,text,text,text,boolean)"
MINUTE_AND_A_TICK = 80.0            # pg_cron 1.4 starts the jobs at each minute
# pg_cron 1.4's launcher writes a background worker's end into cron.job_run_details when it wakes
# before the next minute, whenever the run itself ended: a run numbered just after a given one
# shows as finished up to two minutes later, and a minute more when the machine is busy (make
# test runs its stages side by side, where 140 s once timed out).
FINISHED_RUN_S = 200.0
POLL_S = 0.5                        # the waits are for pg_cron's minutes


def expected_jobs(db: str, suffix: str) -> set[tuple[str, str, str]]:
    return {(JOB_NAME + suffix, db, JOB_ROLE), (PURGE_JOB_NAME + suffix, db, DEPLOYER),
            (WARDEN_JOB_NAME + suffix, db, DEPLOYER)}


def deployer_env() -> dict[str, str]:
    return {**os.environ, "PGUSER": DEPLOYER, "PGPASSWORD": PASSWORD}


def as_deployer(db: str) -> psycopg.Connection:
    return psycopg.connect("", dbname=db, user=DEPLOYER, password=PASSWORD, autocommit=True)


def jobs_of(cron: psycopg.Connection, db: str) -> set[tuple[str, str, str]]:
    return set(cron.execute("SELECT jobname, database, username FROM cron.job WHERE database = %s", [db]))


def native_seconds(cron: psycopg.Connection) -> bool:
    """pg_cron 1.5+ (by extversion, as the deploy reads it): the jobs run on 'N seconds'."""
    return cron_extversion(cron)[:2] >= (1, 5)


@pytest.fixture(scope="module")
def cron():
    """The superuser in the cron database: the provider, and the test's eyes on cron.job."""
    with psycopg.connect("", dbname=CRON_DB, autocommit=True) as conn:
        assert conn.execute("SHOW cron.database_name").fetchone() == (CRON_DB,), \
            "run me in a cluster with cron.database_name = postgres (scripts/test-in-cluster SUITE=crossdb)"
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_cron")
        conn.execute(f"CREATE ROLE {DEPLOYER} LOGIN NOSUPERUSER CREATEROLE PASSWORD '{PASSWORD}'")
        conn.execute(f"GRANT pg_signal_backend TO {DEPLOYER}")
        conn.execute(f"GRANT USAGE ON SCHEMA cron TO {DEPLOYER} WITH GRANT OPTION")
        for db in (FIRST, SECOND):
            conn.execute(f"CREATE DATABASE {db} TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C.UTF-8'")
            subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", db,
                            "-f", str(ROOT / "stand-in" / "messenger_service.sql")], check=True)
            conn.execute(f"GRANT CREATE ON DATABASE {db} TO {DEPLOYER}")
        conn.execute(f"GRANT messenger_service TO {DEPLOYER}")
        yield conn


def test_a_plain_deploy_is_refused_with_a_hint_naming_the_cross_database_mode(cron):
    # As the suite's superuser, who may read cron.database_name: the check that names the mode.
    done = sqitch("deploy", FIRST, check=False)
    out = done.stdout + done.stderr
    assert done.returncode != 0, "a deploy without cron_database into a database that is not pg_cron's must be refused"
    assert "pg_cron keeps its jobs in cron.database_name (postgres), not messenger" in out, out
    assert f"sqitch deploy --set cron_database={CRON_DB} schedules the jobs there" in out, out
    # scheduler=none means no jobs: beside cron_database, which schedules them, it is refused.
    done = sqitch("deploy", FIRST, "--set", "scheduler=none", *CROSS_DB, check=False)
    out = done.stdout + done.stderr
    assert done.returncode != 0 and "scheduler=none schedules no job" in out, out
    assert f"The cross-database mode is sqitch deploy --set cron_database={CRON_DB} alone" in out, out
    assert jobs_of(cron, FIRST) == set()
    with psycopg.connect("", dbname=FIRST, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM pg_proc WHERE proname = 'reap_call_timeouts'").fetchone() == (0,)
        # The registry the superuser's attempts made: the deployer's own deploys make theirs.
        conn.execute("DROP SCHEMA sqitch CASCADE")


def test_without_the_grant_the_deploy_is_refused_naming_it_and_leaves_nothing(cron):
    done = sqitch("deploy", FIRST, *CROSS_DB, env=deployer_env(), check=False)
    assert done.returncode != 0, "the deploy must refuse a deployer without EXECUTE on cron.schedule_in_database"
    out = done.stdout + done.stderr
    assert (f"GRANT EXECUTE ON FUNCTION cron.schedule_in_database(text, text, text, text, text, boolean)"
            f" TO {DEPLOYER} WITH GRANT OPTION") in out, out
    assert jobs_of(cron, FIRST) == set()
    with psycopg.connect("", dbname=FIRST, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM pg_proc WHERE proname = 'reap_call_timeouts'").fetchone() == (0,)
    cron.execute(f"GRANT EXECUTE ON FUNCTION {SCHEDULE_IN_DATABASE} TO {DEPLOYER} WITH GRANT OPTION")


def test_each_product_database_keeps_its_jobs_in_the_cron_database(cron):
    for db in (FIRST, SECOND):
        sqitch("deploy", db, *CROSS_DB, env=deployer_env())
        sqitch("verify", db, *CROSS_DB, env=deployer_env())
    assert jobs_of(cron, FIRST) == expected_jobs(FIRST, "")
    assert jobs_of(cron, SECOND) == expected_jobs(SECOND, f"-{SECOND}")
    # The passing grants are gone: the job role cannot reach its job.
    assert cron.execute(f"SELECT has_schema_privilege('{JOB_ROLE}', 'cron', 'USAGE'),"
                        f" has_function_privilege('{JOB_ROLE}', '{SCHEDULE_IN_DATABASE}', 'EXECUTE')"
                        ).fetchone() == (False, False)
    # A cron script run again (Sqitch re-runs a change whose product-database step failed after
    # the cron database's had committed) keeps the names and the job ids.
    ids = cron.execute("SELECT jobid, jobname, database FROM cron.job ORDER BY jobid").fetchall()
    for change in ("call_reaper", "call_reaper_purge", "call_reaper_warden"):
        subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-v", "scheduler=pg_cron",
                        "-v", f"cron_database={CRON_DB}", "-d", SECOND,
                        "-f", str(ROOT / "deploy" / "cron" / f"{change}.sql")],
                       env=deployer_env(), cwd=ROOT, check=True, capture_output=True)
    assert cron.execute("SELECT jobid, jobname, database FROM cron.job ORDER BY jobid").fetchall() == ids


def test_due_calls_close_by_their_own_databases_job_and_a_pause_holds_in_one(cron):
    with as_deployer(FIRST) as first, as_deployer(SECOND) as second:
        for conn, db in ((first, FIRST), (second, SECOND)):
            status = conn.execute("SELECT cron_database, job_scheduled, schedule, job_active, jobs"
                                  " FROM messenger.call_reaper_status()").fetchone()
            schedule = "15 seconds" if native_seconds(cron) else "* * * * *"
            assert status == (CRON_DB, True, schedule, None, []), f"{db}: {status}"
        assert second.execute("SELECT messenger.pause_call_reaper()").fetchone() == (True,)
        first.execute("SELECT messenger.resume_call_reaper()")

    with psycopg.connect("", dbname=FIRST, autocommit=True) as first, \
         psycopg.connect("", dbname=SECOND, autocommit=True) as second:
        now = first.execute("SELECT clock_timestamp()").fetchone()[0]
        (mine,) = Calls(first).add([ringing(now - timedelta(minutes=5))])
        (theirs,) = Calls(second).add([ringing(now - timedelta(minutes=5))])
        since = cron.execute("SELECT coalesce(max(runid), 0) FROM cron.job_run_details").fetchone()[0]

        wait_for(lambda: call_rows(first, [mine["call_id"]])[mine["call_id"]]["status"] == "Missed",
                 MINUTE_AND_A_TICK, "the first database's job to close its call", interval=POLL_S)
        # The paused database's job ran too (the same minute), and closed nothing.
        try:
            wait_for(lambda: cron.execute(
                "SELECT count(*) FROM cron.job_run_details AS d JOIN cron.job AS j USING (jobid)"
                " WHERE d.runid > %s AND j.jobname = %s AND j.database = %s AND d.status = 'succeeded'",
                [since, JOB_NAME + f"-{SECOND}", SECOND]).fetchone()[0],
                FINISHED_RUN_S, "the paused database's job to finish a run", interval=POLL_S)
        except AssertionError as timed_out:
            runs = cron.execute(
                "SELECT d.runid, j.jobname, d.status, d.start_time, d.end_time, d.return_message"
                "  FROM cron.job_run_details AS d JOIN cron.job AS j USING (jobid)"
                " WHERE d.runid > %s ORDER BY d.runid", [since]).fetchall()
            raise AssertionError(f"{timed_out}; runs since: {runs}") from None
        assert call_rows(second, [theirs["call_id"]])[theirs["call_id"]]["status"] == "Ringing"
        # Each database's outbox and ledger hold its own call only.
        for conn, call, other in ((first, mine, theirs), (second, theirs, mine)):
            refs = {r[0] for r in conn.execute("SELECT reference_id FROM messenger.realtime_outbox")}
            assert other["call_id"] not in refs
        assert first.execute("SELECT kind FROM messenger.realtime_outbox WHERE reference_id = %s",
                             [mine["call_id"]]).fetchall() == [("CallMissed",)]
        assert second.execute("SELECT count(*) FROM messenger.call_reaper_runs WHERE missed_count > 0").fetchone() == (0,)

        with as_deployer(SECOND) as conn:
            conn.execute("SELECT messenger.resume_call_reaper()")
        wait_for(lambda: call_rows(second, [theirs["call_id"]])[theirs["call_id"]]["status"] == "Missed",
                 MINUTE_AND_A_TICK, "the second database's job to close its call after resume", interval=POLL_S)
        assert call_rows(first, [mine["call_id"]])[mine["call_id"]]["status"] == "Missed"


def test_polling_interval_from_a_product_database(cron):
    native = native_seconds(cron)
    with as_deployer(FIRST) as conn:
        # pg_cron 1.4: the job's minute CALL reads the setting, nothing to reschedule.
        if not native:
            with conn.transaction(force_rollback=True):
                conn.execute("UPDATE messenger.call_reaper_settings SET polling_interval = '30 seconds'")
                assert conn.execute("SELECT polling_interval FROM messenger.call_reaper_settings"
                                    ).fetchone() == (timedelta(seconds=30),)
        # pg_cron 1.5+ (as recorded; on 1.4 the record says so for this transaction): the job has
        # a schedule of its own, kept where this database cannot reach it: refused, nothing changed.
        with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState), conn.transaction():
            if not native:
                conn.execute("UPDATE messenger.call_reaper_cron_jobs SET cron_version = '1.6.7' WHERE kind = 'reaper'")
            conn.execute("UPDATE messenger.call_reaper_settings SET polling_interval = '30 seconds'")
        assert conn.execute("SELECT polling_interval FROM messenger.call_reaper_settings"
                            ).fetchone() == (timedelta(seconds=15),)
    assert jobs_of(cron, FIRST) == expected_jobs(FIRST, "")


def details_job(cron: psycopg.Connection, db: str, suffix: str) -> tuple[str, str]:
    """(owner, command) of the job that purges db's jobs' run details in the cron database."""
    rows = cron.execute("SELECT username, command FROM cron.job WHERE jobname = %s AND database = %s",
                        [f"{PURGE_JOB_NAME}{suffix}-details", CRON_DB]).fetchall()
    assert len(rows) == 1, f"{db}: no job purging its run details in {CRON_DB}: {rows}"
    return rows[0]


def test_run_details_are_purged_in_the_cron_database_for_their_own_database_only(cron):
    # pg_cron never purges cron.job_run_details; the purge job runs in the product database and
    # cannot reach the rows kept here. Rows as pg_cron writes them: a job's run, its database,
    # its owner, when it ended (a connection failure in libpq mode has no times at all).
    def jobid(name: str, db: str) -> int:
        return cron.execute("SELECT jobid FROM cron.job WHERE jobname = %s AND database = %s", [name, db]).fetchone()[0]

    def run(job: int, db: str, user: str, age: str) -> int:
        return cron.execute(
            "INSERT INTO cron.job_run_details (jobid, database, username, command, status, start_time, end_time)"
            " VALUES (%s, %s, %s, 'test', 'succeeded', now() - %s::interval, now() - %s::interval) RETURNING runid",
            [job, db, user, age, age]).fetchone()[0]

    warden, warden_eu = jobid(WARDEN_JOB_NAME, FIRST), jobid(WARDEN_JOB_NAME + f"-{SECOND}", SECOND)
    (never_started,) = cron.execute(
        "INSERT INTO cron.job_run_details (jobid, database, username, command, status, return_message)"
        " VALUES (%s, %s, %s, 'test', 'failed', 'connection failed') RETURNING runid",
        [warden, FIRST, DEPLOYER]).fetchone()
    old = run(warden, FIRST, DEPLOYER, "8 days")
    recent = run(warden, FIRST, DEPLOYER, "6 days")
    theirs = run(warden_eu, SECOND, DEPLOYER, "8 days")
    other_job = run(warden + 1000, FIRST, DEPLOYER, "8 days")     # not one of the reaper's jobs
    job_role = run(jobid(JOB_NAME, FIRST), FIRST, JOB_ROLE, "8 days")
    left = "SELECT runid FROM cron.job_run_details WHERE runid = ANY(%s)"
    every = [never_started, old, recent, theirs, other_job, job_role]

    owner, command = details_job(cron, FIRST, "")
    assert owner == DEPLOYER
    with as_deployer(CRON_DB) as conn:       # the job runs its command as its owner
        conn.execute(command)
    # A deployer that is not a superuser sees only its own jobs' run details: the job role's stay.
    assert {r[0] for r in cron.execute(left, [every])} == {recent, theirs, other_job, job_role}

    owner, command = details_job(cron, SECOND, f"-{SECOND}")
    with as_deployer(CRON_DB) as conn:
        conn.execute(command)
    assert {r[0] for r in cron.execute(left, [every])} == {recent, other_job, job_role}
    cron.execute("DELETE FROM cron.job_run_details WHERE runid = ANY(%s)", [every])


def test_reverting_one_database_leaves_the_others_jobs(cron):
    # The second database adopted the roles the first one's deploy created: it goes first.
    second_ids = set(cron.execute("SELECT jobid FROM cron.job WHERE database = %s", [SECOND]).fetchall())
    first_ids = set(cron.execute("SELECT jobid FROM cron.job WHERE database = %s", [FIRST]).fetchall())
    sqitch("revert", SECOND, "-y", env=deployer_env())
    assert jobs_of(cron, SECOND) == set()
    # Its job in the cron database (the run details' purge) goes with them, the first's stays.
    assert jobs_of(cron, CRON_DB) == {(f"{PURGE_JOB_NAME}-details", CRON_DB, DEPLOYER)}
    assert set(cron.execute("SELECT jobid FROM cron.job WHERE database = %s", [FIRST]).fetchall()) == first_ids
    assert second_ids and not (second_ids & first_ids)
    sqitch("verify", FIRST, *CROSS_DB, env=deployer_env())
    # The job role's statement_timeout (pg_cron 1.4's minute CALL, none on 1.5+) goes with its
    # database's jobs.
    timeouts = """SELECT d.datname FROM pg_db_role_setting AS s JOIN pg_roles AS r ON r.oid = s.setrole
                    JOIN pg_database AS d ON d.oid = s.setdatabase WHERE r.rolname = %s"""
    assert cron.execute(timeouts, [JOB_ROLE]).fetchall() == ([] if native_seconds(cron) else [(FIRST,)])
    sqitch("revert", FIRST, "-y", env=deployer_env())
    assert cron.execute("SELECT count(*) FROM cron.job").fetchone() == (0,)
    assert cron.execute("SELECT count(*) FROM pg_roles WHERE rolname = %s", [JOB_ROLE]).fetchone() == (0,)
