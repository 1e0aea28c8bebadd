"""The release tarball as a DBA gets it, deployed from where a DBA unpacks it.

`scripts/dist` (make dist) builds the tarball of this tree; each test unpacks it in an empty
directory outside the checkout, with no git, and runs sqitch there against a fresh database
holding the stand-in's tables (--set scheduler=none: only cron.database_name holds pg_cron jobs).
Checked:
- the tarball holds the bundle with every script and include of the tree, the exporter's wheel
  at the release's version, the DBA's documents (README and every page it links to,
  transitively) and scripts, and nothing else; its .sha256 verifies;
- unpacked, every relative link and #anchor of its pages, and every document or section its
  scripts' messages, alerts and runbook name, resolves inside it (scripts/doclinks.py); the DBA
  scripts run from it;
- deploy, verify, a due call of each phase closes with its outbox rows, revert: every product
  object and row as it was, nothing of the reaper's left;
- a file missing from an unpacked tarball fails `scripts/dist --check` and the revert that reads it;
- the README's "Is it working" query, run as written on the deployed database with pg_cron: on a
  server where nothing rings, the healthy answer (a cycle within a polling interval, the job's
  last run succeeded, no backlog); paused, a due call counted in the backlog;
- the upgrade a DBA runs: the tarball of the latest release, built from that release's tree,
  deployed, then this tree's tarball deployed over it, verified, reaping, reverted. The latest
  release is the newest git tag vX.Y.Z, else (a clone without tags) the commit that added the
  plan's latest @v tag; with no tag in the plan, this tree's tarball is deployed over itself;
- the version: X.Y.Z only on the release commit, else the next version with .devN.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from adoption_support import (
    ROOT,
    create_product_database,
    drop_product_database,
    dsn_for,
    product_objects,
    product_rows,
    reaper_objects,
    sqitch,
)
from reaper_support import ringing, wait_for

sys.path.insert(0, str(ROOT / "scripts"))
from doclinks import check as broken_docs

NO_CRON = ("--set", "scheduler=none")
DIST = ROOT / "scripts" / "dist"
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
# What a DBA needs beside the bundle's sqitch.conf, sqitch.plan, deploy/, revert/, verify/.
DOCUMENTS = {"README.md", "LICENSE", "CHANGELOG.md", "CONTRIBUTING.md", "server.conf", "monitoring", "sql",
             "docs", "wheel", "scripts", "exporter"}
# The scripts the pages tell a DBA to run, and what they read beside them.
DBA_SCRIPTS = {"scripts/reaper-job", "scripts/lib.sh", "scripts/reaper-loop", "scripts/patroni-on-role-change",
               "exporter/call_reaper_dsn.py"}


def run(*command: str | Path, cwd: Path = ROOT, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(c) for c in command], cwd=cwd, capture_output=True, text=True, check=False)
    if check:
        assert done.returncode == 0, f"{' '.join(map(str, command))}\n{done.stdout}{done.stderr}"
    return done


def build(out: Path, *args: str, dist: Path = DIST) -> Path:
    """The tarball scripts/dist writes into out (its last line names it); this checkout's pip
    builds the wheel, whichever tree's scripts/dist runs."""
    env = {**os.environ, "DIST_PIP": str(ROOT / ".venv" / "bin" / "pip")}
    done = subprocess.run([str(dist), "--out", str(out), *args], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, f"{dist} --out {out} {' '.join(args)}\n{done.stdout}{done.stderr}"
    return Path(done.stdout.splitlines()[-1])


def unpack(tarball: Path, into: Path) -> Path:
    """Checks the sum as a DBA would (sha256sum -c beside it), unpacks into an empty directory."""
    run("sha256sum", "-c", f"{tarball.name}.sha256", cwd=tarball.parent)
    into.mkdir()
    with tarfile.open(tarball) as tar:
        tar.extractall(into, filter="data")
    (top,) = into.iterdir()
    assert run("git", "-C", top, "rev-parse", "--git-dir", check=False).returncode != 0, \
        f"{top} is inside a git checkout: the test must deploy from where a DBA unpacks"
    return top


def tracked(*paths: str) -> set[str]:
    return set(run("git", "ls-files", "--", *paths).stdout.split())


def files_under(top: Path, *folders: str) -> set[str]:
    return {str(p.relative_to(top)) for f in folders for p in (top / f).rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def tarball(tmp_path_factory) -> Path:
    return build(tmp_path_factory.mktemp("dist"))


@pytest.fixture
def product_db(dsn):
    """A fresh database with the stand-in's tables, a due call of each phase and an ended one."""
    name = "release_tarball"
    with psycopg.connect(dsn, autocommit=True) as admin:
        create_product_database(admin, name)
    with psycopg.connect(dsn_for(name), autocommit=True) as conn:
        conn.execute("""
            INSERT INTO messenger.call_sessions (call_id, caller_user_id, callee_user_id, media_type, status,
                                                 end_reason, started_at, answered_at, ended_at, updated_at)
            VALUES (gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing',
                    NULL, now() - interval '5 minutes', NULL, NULL, now() - interval '5 minutes'),
                   (gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Video', 'Answered',
                    NULL, now() - interval '3 hours', now() - interval '3 hours', NULL, now() - interval '3 hours'),
                   (gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Missed',
                    'Timeout', now() - interval '1 day', NULL, now() - interval '1 day', now() - interval '1 day')""")
        yield name, conn
    with psycopg.connect(dsn, autocommit=True) as admin:
        drop_product_database(admin, name)


def deploy_reap_revert(conn: psycopg.Connection, name: str, bundle: Path, found: list[str]) -> None:
    """Verify what is deployed from bundle, a cycle closes both due calls, revert from bundle."""
    sqitch("verify", name, *NO_CRON, cwd=bundle)
    missed, failed = conn.execute("SELECT missed_count, failed_count FROM messenger.reap_call_timeouts()").fetchone()
    assert (missed, failed) == (1, 1)
    kinds = conn.execute("SELECT kind, count(*) FROM messenger.realtime_outbox GROUP BY kind ORDER BY kind").fetchall()
    assert kinds == [("CallEnded", 2), ("CallMissed", 1)]
    rows = product_rows(conn)
    sqitch("revert", name, "-y", *NO_CRON, cwd=bundle)
    assert product_rows(conn) == rows, "the revert changed a row of the product's"
    assert product_objects(conn) == found, "the revert did not give the product's objects back"
    assert reaper_objects(conn) == []


def test_the_tarball_holds_what_a_dba_needs_and_nothing_else(tarball, tmp_path):
    assert tarball.name == f"call-timeout-reaper-{VERSION}.tar.gz"
    top = unpack(tarball, tmp_path / "unpacked")
    assert top.name == f"call-timeout-reaper-{VERSION}"
    assert {p.name for p in top.iterdir()} == DOCUMENTS | {"sqitch.conf", "sqitch.plan", "deploy", "revert", "verify"}
    # Every script and every include the tree has (the plan lint allows no script without a change).
    assert files_under(top, "deploy", "revert", "verify") == tracked("deploy", "revert", "verify")
    assert any("/include/" in f for f in files_under(top, "deploy", "revert", "verify"))
    assert files_under(top, "monitoring") == tracked("monitoring")
    assert files_under(top, "docs") == tracked("docs")   # every page is linked from the README's
    assert files_under(top, "scripts", "exporter") == DBA_SCRIPTS
    assert files_under(top, "sql") == tracked("sql") - {"sql/demo_calls.sql"}
    (wheel,) = (top / "wheel").iterdir()
    assert wheel.name == f"call_timeout_reaper_exporter-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as whl:
        metadata = whl.read(f"call_timeout_reaper_exporter-{VERSION}.dist-info/METADATA").decode()
        entry_points = whl.read(f"call_timeout_reaper_exporter-{VERSION}.dist-info/entry_points.txt").decode()
    assert f"\nVersion: {VERSION}\n" in metadata
    assert "call-reaper-exporter = call_reaper_exporter:main" in entry_points
    # The wheel is the exporter: importable from the wheel alone (-I: not from the checkout).
    imported = run(ROOT / ".venv" / "bin" / "python", "-I", "-c",
                   f"import sys; sys.path.insert(0, {str(wheel)!r}); "
                   "import call_reaper_exporter as m; print(m.__file__)", cwd=tmp_path)
    assert imported.stdout.strip().startswith(str(wheel))


def test_every_link_and_named_section_of_the_tarball_resolves_in_it(tarball, tmp_path):
    top = unpack(tarball, tmp_path / "unpacked")
    assert broken_docs(top) == []
    # The check reads the tarball, not the tree: a page it lacks is reported.
    (top / "docs" / "scheduling.md").unlink()
    broken = broken_docs(top)
    assert "README.md: docs/scheduling.md: no such file" in broken
    assert any(b.startswith("docs/runbooks/call-timeout-reaper.md: ../scheduling.md") for b in broken)


def test_deploy_verify_reap_and_revert_from_the_tarball(tarball, tmp_path, product_db):
    name, conn = product_db
    found = product_objects(conn)
    bundle = unpack(tarball, tmp_path / "unpacked")
    sqitch("deploy", name, *NO_CRON, cwd=bundle)
    # The DBA scripts run from the unpacked tarball, beside nothing of the checkout's.
    env = {**os.environ, "PGDATABASE": name}
    env.pop("DATABASE_URL", None)
    status = subprocess.run([bundle / "scripts" / "reaper-job", "status"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, check=False)
    assert status.returncode == 0 and status.stdout.startswith("running"), status.stdout + status.stderr
    # reaper-loop imports the redaction from ../exporter: the tarball's own copy, not the tree's.
    python = ROOT / ".venv" / "bin" / "python"
    loop = run(python, "-c", "import runpy, sys; runpy.run_path('scripts/reaper-loop', run_name='imported');"
               " print(sys.modules['call_reaper_dsn'].__file__)", cwd=bundle)
    assert loop.stdout.strip() == str(bundle / "exporter" / "call_reaper_dsn.py")
    assert "scheduler=none" in run(python, bundle / "scripts" / "reaper-loop", "--help", cwd=tmp_path).stdout
    # A callback for a replica is ignored at once: the one run that needs no Patroni.
    run(bundle / "scripts" / "patroni-on-role-change", "on_role_change", "replica", "test", cwd=tmp_path)
    deploy_reap_revert(conn, name, bundle, found)


def test_a_file_missing_from_the_tarball_fails_the_check_and_the_revert(tarball, tmp_path, product_db):
    name, conn = product_db
    found = product_objects(conn)
    bundle = unpack(tarball, tmp_path / "unpacked")
    run(DIST, "--check", bundle)
    broken = tmp_path / "broken"
    shutil.copytree(bundle, broken)
    (missing,) = (broken / "revert" / "cron" / "include").iterdir()
    missing.unlink()
    checked = run(DIST, "--check", broken, check=False)
    assert checked.returncode != 0 and f"{missing.relative_to(broken)}, which is missing" in checked.stderr
    # With scheduler=none no cron deploy script reads its includes, but every cron revert does.
    sqitch("deploy", name, *NO_CRON, cwd=broken)
    reverted = sqitch("revert", name, "-y", *NO_CRON, cwd=broken, check=False)
    assert reverted.returncode != 0 and missing.name in reverted.stderr
    sqitch("revert", name, "-y", *NO_CRON, cwd=bundle)
    assert product_objects(conn) == found and reaper_objects(conn) == []


def latest_release() -> tuple[str, str] | None:
    """(commit, version) of the latest release, or None when the plan has no tag yet."""
    tags = run("git", "tag", "--list", "v[0-9]*.[0-9]*.[0-9]*", "--sort=-v:refname").stdout.split()
    if tags:
        return run("git", "rev-list", "-n", "1", tags[0]).stdout.strip(), tags[0][1:]
    plan_tags = re.findall(r"(?m)^@(v\d+\.\d+\.\d+) ", (ROOT / "sqitch.plan").read_text())
    if not plan_tags:
        return None
    # A shallow clone's oldest commit seems to add every line: its history must be whole.
    assert run("git", "rev-parse", "--is-shallow-repository").stdout.strip() == "false", \
        "a shallow clone cannot tell which commit added the plan's last tag: git fetch --unshallow"
    added = run("git", "log", "--format=%H", f"-S@{plan_tags[-1]} ", "--", "sqitch.plan").stdout.split()
    assert added, f"no commit added @{plan_tags[-1]} to sqitch.plan"
    return added[-1], plan_tags[-1][1:]


def test_the_tree_between_releases_is_the_next_version_in_development():
    # make dist names the tarball by pyproject.toml's version: only the release commit itself may
    # carry a released X.Y.Z; any other tree is the next version with .devN (PEP 440), so no
    # second, different tarball is ever built under a released name.
    release = latest_release()
    head = run("git", "rev-parse", "HEAD").stdout.strip()
    if release and release[0] == head:
        assert VERSION == release[1], f"the release commit of {release[1]} says {VERSION}"
        return
    developed = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)\.dev\d+", VERSION)
    assert developed, f"pyproject.toml says {VERSION}: between releases X.Y.Z.devN, the next version"
    if release:
        assert tuple(map(int, developed.groups())) > tuple(map(int, release[1].split("."))), \
            f"{VERSION} is not after the latest release, {release[1]}"


def release_tarball(commit: str, version: str, tmp_path: Path) -> Path:
    """The release's tarball built from its own tree (git archive), by its own scripts/dist if it
    has one, else by this one as a tree from before the first release."""
    tree = tmp_path / "release-tree"
    tree.mkdir()
    archive = subprocess.run(["git", "archive", commit], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "x"], input=archive, cwd=tree, check=True)
    if (tree / "scripts" / "dist").is_file():
        return build(tmp_path / "release-dist", "--tree", str(tree), "--version", version,
                     dist=tree / "scripts" / "dist")
    return build(tmp_path / "release-dist", "--tree", str(tree), "--version", version, "--before-release")


def test_upgrade_from_the_latest_release(tarball, tmp_path, product_db):
    name, conn = product_db
    found = product_objects(conn)
    release = latest_release()
    old = release_tarball(*release, tmp_path) if release else tarball
    print(f"upgrade from {release[1] + ' at ' + release[0][:12] if release else 'this tree (no tag in the plan)'}")
    sqitch("deploy", name, *NO_CRON, cwd=unpack(old, tmp_path / "release"))
    bundle = unpack(tarball, tmp_path / "unpacked")
    sqitch("deploy", name, *NO_CRON, cwd=bundle)
    deploy_reap_revert(conn, name, bundle, found)


def readmes_is_it_working(conn: psycopg.Connection) -> dict:
    """The README's "Is it working" query, run as written: its one row by column name."""
    readme = (ROOT / "README.md").read_text()
    query = re.search(r"(?ms)^## Is it working\n.*?^```sql\n(.*?)^```", readme).group(1)
    cur = conn.execute(query)
    (row,) = cur.fetchall()
    return dict(zip([c.name for c in cur.description], row, strict=True))


def test_the_readmes_is_it_working_query_on_a_server_where_nothing_rings(conn):
    # The job runs (no test pauses it here) and every call of the tests is far in the future,
    # so its cycles find nothing to do and leave no ledger row: the answer is healthy all the
    # same. pg_cron 1.4's launcher runs a job redeployed by the harness's round trip from a later
    # minute on, and its CALL ends at the end of a minute: up to about 3 minutes.
    interval = conn.execute("SELECT polling_interval FROM messenger.call_reaper_settings").fetchone()[0]

    def healthy() -> bool:
        seen = readmes_is_it_working(conn)
        return (seen["paused"] is False and seen["job_last_run"] == "succeeded"
                and seen["last_cycle_at"] is not None
                and datetime.now(UTC) - seen["last_cycle_at"] <= interval + timedelta(seconds=1)
                and seen["backlog"] == 0)

    wait_for(healthy, 200, "the README's healthy answer", interval=1)
    seen = readmes_is_it_working(conn)
    assert list(seen) == ["paused", "last_cycle_at", "job_last_run", "job_last_end", "job_message", "backlog"]


def test_the_readmes_is_it_working_query_counts_the_backlog(conn, reaper_paused, calls):
    before = readmes_is_it_working(conn)["backlog"]
    calls.add([ringing(datetime.now(UTC) - timedelta(minutes=5))])
    seen = readmes_is_it_working(conn)
    assert seen["paused"] is True and seen["backlog"] == before + 1
