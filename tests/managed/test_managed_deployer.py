"""Managed PostgreSQL, emulated: the reaper deployed, scheduled, run and reverted by a role that
is not a superuser, in the pg_cron database (cron.database_name).

scripts/test-in-cluster runs this file while the reaper is reverted from that database (between
the round trip's revert and its deploy). The deploying role has what RDS/Aurora's
rds_superuser, Cloud SQL's cloudsqlsuperuser, Azure's azure_pg_admin or Supabase's postgres
give their admin: CREATEROLE, membership in the role that owns the product's tables,
pg_signal_backend, USAGE on schema cron WITH GRANT OPTION from the provider, pg_cron created by
the provider, CREATE on its database (for Sqitch's registry). Proved here:
- a late change that fails makes Sqitch revert everything it deployed, for a superuser and for
  this deployer: the database is as it was;
- this deployer deploys and verifies; the pg_cron job, as messenger_call_reaper, closes due
  calls with no hand-run cycle; that role cannot reach its job;
- its revert leaves no job, no role it created, no grant, and every product object and row;
- its UPDATE of polling_interval reschedules the job role's job on pg_cron 1.5+ (in place, the
  job role left without USAGE on schema cron); on 1.4 the job stays on the minute.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
from adoption_support import (
    ROOT,
    cron_extversion,
    product_objects,
    product_rows,
    reaper_objects,
    sqitch,
)
from reaper_facts import JOB_NAME, JOB_ROLE, OWNER_ROLE, PURGE_JOB_NAME, WARDEN_JOB_NAME

DB = "messenger"            # cron.database_name (server.conf)
DEPLOYER = "reaper_deployer"
PASSWORD = "managed-admin"  # this throwaway cluster only
REGISTRY = ("--registry", "sqitch_managed")  # the superuser's registry is not this role's
JOBS = (JOB_NAME, PURGE_JOB_NAME, WARDEN_JOB_NAME)


@pytest.fixture(scope="module")
def admin():
    with psycopg.connect("", dbname=DB, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM pg_proc WHERE proname = 'reap_call_timeouts'").fetchone() == (0,), \
            "run me while the reaper is reverted (scripts/test-in-cluster)"
        conn.execute(f"""
            DO $$ BEGIN
                IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{DEPLOYER}') THEN
                    CREATE ROLE {DEPLOYER} LOGIN NOSUPERUSER CREATEROLE PASSWORD '{PASSWORD}';
                END IF;
            END $$;
            GRANT messenger_service TO {DEPLOYER};
            GRANT pg_signal_backend TO {DEPLOYER};
            GRANT USAGE ON SCHEMA cron TO {DEPLOYER} WITH GRANT OPTION;
            GRANT CREATE ON DATABASE {DB} TO {DEPLOYER};""")
        yield conn


def deployer_env() -> dict[str, str]:
    return {**os.environ, "PGUSER": DEPLOYER, "PGPASSWORD": PASSWORD}


def cluster_facts(conn: psycopg.Connection) -> list[str]:
    rows = conn.execute("""
        SELECT 'role ' || rolname FROM pg_roles WHERE rolname LIKE 'messenger\\_call\\_reaper%'
        UNION ALL
        SELECT 'job ' || jobname || ' ' || username FROM cron.job
        UNION ALL
        SELECT 'setting ' || coalesce(setdatabase::text, '') || ' ' || setrole::regrole::text || ' ' || setconfig::text
          FROM pg_db_role_setting
        UNION ALL
        SELECT 'cron acl ' || coalesce(nspacl::text, '') FROM pg_namespace WHERE nspname = 'cron'""")
    return sorted(r[0] for r in rows)


def state(conn: psycopg.Connection) -> tuple:
    return (product_objects(conn), reaper_objects(conn), cluster_facts(conn))


def failing_copy(tmp_path: Path) -> Path:
    """This project with one more change at the end of its plan that fails on purpose."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    copy = tmp_path / "project"
    for name in files:
        if (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    for kind, body in (("deploy", "SELECT 1 / 0;"), ("revert", ""), ("verify", "")):
        (copy / kind / "zz_fails.sql").write_text(f"BEGIN;\n{body}\nCOMMIT;\n" if kind != "verify"
                                                   else "BEGIN;\nROLLBACK;\n")
    with (copy / "sqitch.plan").open("a") as plan:
        plan.write("zz_fails [cron/call_reaper_warden] 2026-12-01T10:00:00Z Test <test@example.invalid>"
                   " # Fails on purpose: Sqitch must revert everything before it.\n")
    return copy


@pytest.mark.parametrize("who", ["superuser", DEPLOYER])
def test_a_late_change_that_fails_leaves_the_database_as_it_was(admin, tmp_path, who):
    before = state(admin)
    rows = product_rows(admin)
    env, registry = (deployer_env(), REGISTRY) if who == DEPLOYER else (None, ())
    done = sqitch("deploy", DB, *registry, cwd=failing_copy(tmp_path), env=env, check=False)
    out = done.stdout + done.stderr
    assert done.returncode != 0 and "division by zero" in out, out
    assert "Reverting" in out and "manually repaired" not in out, out
    assert state(admin) == before, "the automatic revert left the database changed"
    assert product_rows(admin) == rows


def test_a_deployer_that_is_not_a_superuser_deploys_schedules_and_reverts(admin):
    env = deployer_env()
    objects_before, _, facts_before = state(admin)
    sqitch("deploy", DB, *REGISTRY, env=env)
    sqitch("verify", DB, *REGISTRY, env=env)
    jobs = dict(admin.execute("SELECT jobname, username FROM cron.job WHERE jobname = ANY(%s)", (list(JOBS),)).fetchall())
    assert jobs == {JOB_NAME: JOB_ROLE, PURGE_JOB_NAME: DEPLOYER, WARDEN_JOB_NAME: DEPLOYER}
    # The job role cannot alter or unschedule its job: no way into schema cron.
    assert admin.execute(f"SELECT has_schema_privilege('{JOB_ROLE}', 'cron', 'USAGE')").fetchone() == (False,)
    assert admin.execute(f"SELECT rolsuper FROM pg_roles WHERE rolname = '{DEPLOYER}'").fetchone() == (False,)

    # Due calls, closed by the scheduled job alone (pg_cron 1.4: the minute's CALL ticks every 15 s).
    admin.execute("""
        INSERT INTO messenger.call_sessions (call_id, caller_user_id, callee_user_id, media_type, status, started_at, updated_at)
        SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing',
               now() - interval '2 minutes', now() - interval '2 minutes'
          FROM generate_series(1, 25)""")
    deadline = time.monotonic() + 150
    while time.monotonic() < deadline:
        open_calls = admin.execute("SELECT count(*) FROM messenger.call_sessions WHERE status = 'Ringing'"
                                   " AND started_at < now() - interval '1 minute'").fetchone()[0]
        if open_calls == 0:
            break
        time.sleep(2)
    assert open_calls == 0, "the scheduled job did not close the due calls"
    ran = admin.execute("SELECT count(*), sum(missed_count) FROM messenger.call_reaper_runs WHERE lock_acquired").fetchone()
    assert ran[0] >= 1 and ran[1] >= 25

    rows_before_revert = product_rows(admin)
    sqitch("revert", DB, *REGISTRY, "-y", env=env)
    objects_after, reaper_after, facts_after = state(admin)
    assert reaper_after == [], "revert left something of the reaper behind"
    assert objects_after == objects_before, "revert changed a product object"
    assert facts_after == facts_before, "revert left a job, a role, a role setting or a cron grant behind"
    assert product_rows(admin) == rows_before_revert, "revert changed a product row"
    for role in (JOB_ROLE, OWNER_ROLE):
        assert admin.execute("SELECT count(*) FROM pg_roles WHERE rolname = %s", (role,)).fetchone() == (0,)
    admin.execute("DROP SCHEMA sqitch_managed CASCADE")


def test_a_deployer_that_is_not_a_superuser_changes_the_polling_interval(admin):
    env = deployer_env()
    sqitch("deploy", DB, *REGISTRY, env=env)
    job = "SELECT jobid, schedule FROM cron.job WHERE jobname = %s AND username = %s"
    (jobid, before), = admin.execute(job, (JOB_NAME, JOB_ROLE)).fetchall()
    with psycopg.connect("", dbname=DB, user=DEPLOYER, password=PASSWORD, autocommit=True) as conn:
        conn.execute("UPDATE messenger.call_reaper_settings SET polling_interval = '10 seconds'")
        recorded = conn.execute("SELECT schedule FROM messenger.call_reaper_cron_jobs WHERE kind = 'reaper'").fetchone()
    if cron_extversion(admin)[:2] >= (1, 5):
        # The job role's own job, rescheduled by name in the deployer's transaction.
        assert before == "15 seconds"
        assert admin.execute(job, (JOB_NAME, JOB_ROLE)).fetchall() == [(jobid, "10 seconds")]
        assert recorded == ("10 seconds",)
    else:
        # 1.4 has no seconds schedule: the minute's CALL reads the new interval, nothing rescheduled.
        assert before == "* * * * *"
        assert admin.execute(job, (JOB_NAME, JOB_ROLE)).fetchall() == [(jobid, "* * * * *")]
        assert recorded == ("* * * * *",)
    assert admin.execute(f"SELECT has_schema_privilege('{JOB_ROLE}', 'cron', 'USAGE')").fetchone() == (False,)
    sqitch("revert", DB, *REGISTRY, "-y", env=env)
    admin.execute("DROP SCHEMA sqitch_managed CASCADE")
