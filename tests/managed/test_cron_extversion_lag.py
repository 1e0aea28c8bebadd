"""pg_cron's extension version lagging its installed package: the deploy warns, naming both.

pg_extension.extversion (pg_cron's SQL objects in the cron database) stays at what CREATE
EXTENSION or the last ALTER EXTENSION pg_cron UPDATE made it; pg_available_extensions
.default_version is the installed package's. The cron changes schedule by extversion, so with it
behind (below 1.5 under a 1.5+ library: the per-minute path) they say so with a WARNING naming
both versions and ALTER EXTENSION pg_cron UPDATE. After the update, the cron changes deployed
again (sqitch rebase, docs/managed-postgresql.md) schedule without it, on 1.5+ natively.

scripts/test-in-cluster runs tests/managed while the reaper is reverted from the pg_cron database
(no job of pg_cron there), so this file may create pg_cron anew at an older version: '1.4', which
Debian's package (1.4-1) and 1.5+ both ship. Not 1.3: its cron.schedule takes the job name as
`name`, which a 1.4+ library reads as text, storing 'messenger-call-timeout-reaper' as
'essenger-call-timeout-reaper' (docs/managed-postgresql.md). It leaves pg_cron updated to the
package's version and the reaper reverted, as it found them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import psycopg
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
from adoption_support import cron_extversion, cron_version, sqitch
from reaper_facts import JOB_NAME, WARDEN_JOB_NAME

DB = "messenger"                         # cron.database_name (server.conf)
OLD = "1.4"
WARNING = "WARNING:  pg_cron's extension version {} is older than its installed package {}"
REDEPLOY_CRON = ("-y", "--onto", "tables/call_reaper_cron_jobs")   # the docs' redeploy of the cron changes


@pytest.fixture
def admin():
    with psycopg.connect("", dbname=DB, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM pg_proc WHERE proname = 'reap_call_timeouts'").fetchone() == (0,), \
            "run me while the reaper is reverted (scripts/test-in-cluster)"
        yield conn


def schedules(conn: psycopg.Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT jobname, schedule FROM cron.job WHERE jobname IN (%s, %s)",
                             (JOB_NAME, WARDEN_JOB_NAME)).fetchall())


def test_a_lagging_extension_version_is_warned_of_until_updated(admin):
    (package,) = admin.execute("SELECT default_version FROM pg_available_extensions WHERE name = 'pg_cron'").fetchone()
    assert cron_version(package) > cron_version(OLD)
    assert admin.execute("SELECT count(*) FROM cron.job").fetchone() == (0,), "pg_cron must have no job to drop"
    admin.execute("DROP EXTENSION pg_cron")
    admin.execute(f"CREATE EXTENSION pg_cron VERSION '{OLD}'")
    try:
        lagging = sqitch("deploy", DB)
        out = lagging.stdout + lagging.stderr
        # Once per cron change that schedules by extversion: the reaper's job and the warden's.
        assert out.count(WARNING.format(OLD, package)) == 2, out
        assert "HINT:  In database messenger, as pg_cron's owner: ALTER EXTENSION pg_cron UPDATE;" in out, out
        assert schedules(admin) == {JOB_NAME: "* * * * *", WARDEN_JOB_NAME: "* * * * *"}, "scheduled by extversion"
        status = admin.execute("SELECT schedule FROM messenger.call_reaper_status()").fetchone()
        assert status == ("* * * * *",)

        admin.execute("ALTER EXTENSION pg_cron UPDATE")
        redeployed = sqitch("rebase", DB, *REDEPLOY_CRON)
        out = redeployed.stdout + redeployed.stderr
        assert "extension version" not in out, out
        native = cron_version(package)[:2] >= (1, 5)
        assert schedules(admin) == ({JOB_NAME: "15 seconds", WARDEN_JOB_NAME: "1 seconds"} if native
                                    else {JOB_NAME: "* * * * *", WARDEN_JOB_NAME: "* * * * *"})
    finally:
        admin.execute("ALTER EXTENSION pg_cron UPDATE")
        sqitch("revert", DB, "-y")
    assert cron_extversion(admin) == cron_version(package)
