"""The stand-in's citus=on variant refuses a database it cannot distribute in (docs/citus.md).
The variant itself needs a Citus coordinator, which make test has not: it was checked by hand
(docs/citus.md, "The Citus stand-in"). What runs here is its refusals, which need no Citus: each
stops before the stand-in creates anything. Run by scripts/test-in-cluster with the stand-in's
tests (the PG* variables name the cluster's messenger database)."""

import subprocess
from pathlib import Path

import psycopg
import pytest

ROOT = Path(__file__).resolve().parents[2]
DB = "stand_in_citus_refused"


@pytest.fixture
def scratch_db():
    with psycopg.connect("", autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {DB}")
        admin.execute(f"CREATE DATABASE {DB}")
        try:
            yield DB
        finally:
            admin.execute(f"DROP DATABASE {DB} WITH (FORCE)")


def run_stand_in(db: str, *variables: str) -> subprocess.CompletedProcess:
    args = ["psql", "-X", "-q", "-d", db, "-v", "ON_ERROR_STOP=1", "-v", "VERBOSITY=verbose"]
    for variable in variables:
        args += ["-v", variable]
    return subprocess.run(args + ["-f", str(ROOT / "stand-in" / "messenger_service.sql")],
                          check=False, capture_output=True, text=True)  # the refusal is the point


def messenger_schema_exists(db: str) -> bool:
    with psycopg.connect(dbname=db) as conn:
        return conn.execute("SELECT to_regnamespace('messenger') IS NOT NULL").fetchone()[0]


@pytest.mark.parametrize("variables,sqlstate", [
    (("citus=on",), "55000"),                     # no citus extension in this database
    (("citus=on", "types=enum"), "55000"),
    (("citus=on", "partitioned=on"), "22023"),    # one or the other
])
def test_citus_variant_refuses_and_creates_nothing(scratch_db, variables, sqlstate):
    result = run_stand_in(scratch_db, *variables)
    assert result.returncode != 0, result.stdout
    assert f"ERROR:  {sqlstate}:" in result.stderr
    assert not messenger_schema_exists(scratch_db)
