"""Versions skew between the exporter and the database, both ways, with the previous release
(RELEASE): an upgrade replaces the two one after the other, and Prometheus scrapes meanwhile.

- This tree's exporter against a database deployed at the release's plan tag (`sqitch deploy
  --to @v2.0.0`, a database of its own beside the stand-in): every scrape answers 200 with up 1,
  the release's values, and the samples of the columns the release's call_reaper_metrics() has
  not (idle_cycles) left out, said once in the log.
- The release's exporter (its code at the commit that added the plan tag, run from a temporary
  directory) against this tree's database, where an idle cycle on the clock leaves no ledger row:
  its run_total still rises with each idle cycle, so its CallReaperNotRunning
  (`sum without (result) (increase(run_total[1m])) == 0`) does not fire on an idle server
  (call_reaper_metrics()' runs_completed counts every completed cycle, as in 2.0.0), while this
  tree's exporter serves the same cycles under result="idle" alone.
"""

from __future__ import annotations

import subprocess
import sys

import psycopg
import pytest
from adoption_support import (
    ROOT,
    create_product_database,
    drop_product_database,
    dsn_for,
    sqitch,
)
from call_reaper_exporter import METRICS, PREFIX
from exporter_support import sample
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from reaper_support import reap

P = PREFIX
RELEASE = "v2.0.0"
RELEASE_DB = "exporter_skew_release"
# The release's run_total results and their columns (2.0.0's exporter, METRICS).
RELEASE_RUN_RESULTS = {"completed": "runs_completed", "skipped": "runs_skipped",
                       "failed": "runs_rolled_back"}


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def release_commit() -> str:
    """The commit that added the release's tag to sqitch.plan (as test_release.py finds it)."""
    # A shallow clone's oldest commit seems to add every line: its history must be whole.
    assert git("rev-parse", "--is-shallow-repository").strip() == "false", \
        "a shallow clone cannot tell which commit added the release's tag: git fetch --unshallow"
    added = git("log", "--format=%H", f"-S@{RELEASE} ", "--", "sqitch.plan").split()
    assert added, f"no commit added @{RELEASE} to sqitch.plan"
    return added[-1]


def metrics_row(conn: psycopg.Connection) -> dict:
    cur = conn.execute("SELECT * FROM messenger.call_reaper_metrics()")
    return dict(zip([c.name for c in cur.description], cur.fetchone(), strict=True))


def monitor_dsn_for(monitor_dsn: str, database: str) -> str:
    return make_conninfo("", **{**conninfo_to_dict(monitor_dsn), "dbname": database})


@pytest.fixture(scope="module")
def release_exporter(tmp_path_factory) -> list[str]:
    """The command that runs the release's exporter: its modules, as that commit has them, in a
    directory of their own (first on its sys.path, ahead of this tree's installed ones)."""
    commit = release_commit()
    directory = tmp_path_factory.mktemp("release-exporter")
    for path in git("ls-tree", "--name-only", commit, "exporter/").split():
        (directory / path.removeprefix("exporter/")).write_text(git("show", f"{commit}:{path}"))
    return [sys.executable, str(directory / "call_reaper_exporter.py")]


@pytest.fixture
def release_db(dsn):
    """A database of its own with the stand-in's tables and the reaper at the release's plan tag
    (no pg_cron: only cron.database_name holds jobs); one Missed call closed, then an idle cycle."""
    with psycopg.connect(dsn, autocommit=True) as admin:
        create_product_database(admin, RELEASE_DB)
    sqitch("deploy", RELEASE_DB, "--to", f"@{RELEASE}", "--set", "scheduler=none")
    with psycopg.connect(dsn_for(RELEASE_DB), autocommit=True) as conn:
        conn.execute("""
            INSERT INTO messenger.call_sessions (call_id, caller_user_id, callee_user_id, media_type,
                                                 status, started_at, updated_at)
            VALUES (gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing',
                    now() - interval '5 minutes', now() - interval '5 minutes')""")
        assert reap(conn)["missed_count"] == 1
        assert reap(conn)["missed_count"] == 0
        yield conn
    with psycopg.connect(dsn, autocommit=True) as admin:
        drop_product_database(admin, RELEASE_DB)


def test_this_exporter_serves_a_release_database(release_db, monitor_dsn, start_exporter):
    row = metrics_row(release_db)
    assert "idle_cycles" not in row, "the release's call_reaper_metrics() has idle_cycles: not the release"
    exporter = start_exporter("--dsn", monitor_dsn_for(monitor_dsn, RELEASE_DB))
    samples, types = exporter.scrape()

    assert sample(samples, P + "up") == 1
    # Every family is served; only the samples of the missing column are not.
    assert set(types) >= {P + spec.name.removesuffix("_total") for spec in METRICS}
    for result, column in RELEASE_RUN_RESULTS.items():
        assert sample(samples, P + "run_total", result=result) == row[column]
    assert row["runs_completed"] >= 2  # the busy cycle and the idle one, each with its ledger row
    assert sample(samples, P + "run_total", result="idle") is None
    assert sample(samples, P + "reap_lag_seconds_count") == row["reap_lag_count"] == 1
    assert sample(samples, P + "cycle_duration_seconds_count") == row["cycle_duration_count"]
    assert sample(samples, P + "last_run_timestamp_seconds") == row["last_run_at"].timestamp()

    exporter.scrape()
    said = [line for line in exporter.log.splitlines() if "idle_cycles" in line]
    assert len(said) == 1 and "level=warn" in said[0], exporter.log


UPGRADE_IDLE_CYCLES = 2


def upgrade_under(exporter, release_db) -> tuple[str, str, str]:
    """The upgrade under a running exporter, as one has it: psycopg prepares a statement it ran 5
    times, and the upgrade gives call_reaper_metrics() another row type. Then two idle cycles on
    the clock. Its scrapes before the upgrade, right after it, and after the cycles."""
    for _ in range(6):
        before, _ = exporter.scrape()
    sqitch("deploy", RELEASE_DB, "--set", "scheduler=none")
    upgraded, _ = exporter.scrape()
    cycles = [reap(release_db) for _ in range(UPGRADE_IDLE_CYCLES)]
    assert all(c["missed_count"] == c["failed_count"] == 0 for c in cycles), cycles
    after, _ = exporter.scrape()
    return before, upgraded, after


def test_exporter_first_then_the_database(release_db, monitor_dsn, start_exporter):
    """The upgrade under a running exporter of this tree: no scrape fails and no series falls
    back; the idle cycles on the clock appear under result="idle", not in result="completed"."""
    exporter = start_exporter("--dsn", monitor_dsn_for(monitor_dsn, RELEASE_DB))
    before, upgraded, after = upgrade_under(exporter, release_db)

    assert [sample(s, P + "up") for s in (before, upgraded, after)] == [1, 1, 1], exporter.log
    completed = [sample(s, P + "run_total", result="completed") for s in (before, upgraded, after)]
    assert completed[0] == completed[1] == completed[2], completed
    idle = [sample(s, P + "run_total", result="idle") for s in (before, upgraded, after)]
    assert idle[0] is None and idle[2] == idle[1] + UPGRADE_IDLE_CYCLES, idle


def test_database_first_then_the_exporter(release_db, monitor_dsn, start_exporter, release_exporter):
    """The other order: the release's exporter fails one scrape at the upgrade (its prepared
    statement), then counts the idle cycles in result="completed"; this tree's exporter, started
    after it, serves them under result="idle", so its result="completed" is lower by them: one
    counter reset for Prometheus (docs/exporter.md, "Upgrading")."""
    target = monitor_dsn_for(monitor_dsn, RELEASE_DB)
    release = start_exporter("--dsn", target, command=release_exporter)
    before, upgraded, counted = upgrade_under(release, release_db)
    release.stop()
    this = start_exporter("--dsn", target)
    switched, _ = this.scrape()

    assert [sample(s, P + "up") for s in (before, upgraded, counted, switched)] == [1, 0, 1, 1], release.log
    assert "cached plan must not change result type" in release.log
    completed = [sample(s, P + "run_total", result="completed") for s in (before, counted, switched)]
    assert completed == [completed[0], completed[0] + UPGRADE_IDLE_CYCLES, completed[0]], completed
    assert sample(switched, P + "run_total", result="idle") == UPGRADE_IDLE_CYCLES


def test_the_release_exporter_counts_idle_cycles_of_this_database(conn, monitor_dsn, start_exporter,
                                                                  release_exporter, reaper_paused):
    release = start_exporter("--dsn", monitor_dsn, command=release_exporter)
    this = start_exporter("--dsn", monitor_dsn)
    before, _ = release.scrape()
    this_before, _ = this.scrape()
    assert sample(before, P + "up") == 1
    ledger = conn.execute("SELECT count(*) FROM messenger.call_reaper_runs").fetchone()[0]
    cycles = [reap(conn) for _ in range(3)]
    assert all(c["missed_count"] == c["failed_count"] == 0 and c["lock_acquired"] for c in cycles), cycles
    assert conn.execute("SELECT count(*) FROM messenger.call_reaper_runs").fetchone()[0] == ledger, \
        "the cycles left ledger rows: not idle cycles on the clock"
    after, _ = release.scrape()
    this_after, _ = this.scrape()

    # What CallReaperNotRunning sums: run_total under every result the release's exporter serves.
    ran = sum(sample(after, P + "run_total", result=r) - sample(before, P + "run_total", result=r)
              for r in RELEASE_RUN_RESULTS)
    assert ran == len(cycles)
    assert sample(after, P + "last_run_timestamp_seconds") > sample(before, P + "last_run_timestamp_seconds")
    # This tree's exporter serves them under result="idle" only: its completed series is the
    # ledger's, which a crash does not set back.
    assert {r: sample(this_after, P + "run_total", result=r) - sample(this_before, P + "run_total", result=r)
            for r in ("completed", "idle", "skipped", "failed")} == \
        {"completed": 0, "idle": len(cycles), "skipped": 0, "failed": 0}
