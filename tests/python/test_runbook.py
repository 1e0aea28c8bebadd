"""What the runbook tells a DBA to run works on the releases it names.

- Its reads of messenger.call_reaper_metrics() and call_reaper_status() name only columns that
  2.0.0 has too (the released definitions, deploy/functions/*@v2.0.0.sql): a page at 3 a.m. on a
  2.0.0 install must not end in "column does not exist".
- Its grants of the job role give back exactly what the deploy gave it: all of them revoked, the
  runbook's block run, the role holds what it held before (in a transaction, rolled back).
"""

from __future__ import annotations

import re
from pathlib import Path

import psycopg
import pytest
from reaper_facts import JOB_ROLE

REPO = Path(__file__).resolve().parents[2]
RUNBOOK = REPO / "docs" / "runbooks" / "call-timeout-reaper.md"
RELEASED = {
    "call_reaper_metrics": REPO / "deploy" / "functions" / "call_reaper_metrics@v2.0.0.sql",
    "call_reaper_status": REPO / "deploy" / "functions" / "call_reaper_status@v2.0.0.sql",
}


def released_columns(function: str) -> set[str]:
    """The result columns of a function as 2.0.0 defines it: RETURNS TABLE (...) or OUT ..."""
    text = RELEASED[function].read_text()
    table = re.search(r"RETURNS TABLE \((.*?)\)\s*LANGUAGE", text, re.DOTALL)
    names = (re.findall(r"^\s*(\w+)\s", table[1], re.MULTILINE) if table
             else re.findall(r"\bOUT\s+(\w+)", text))
    assert len(names) >= 10, (function, names)
    return set(names)


def runbook_reads() -> list[tuple[str, str]]:
    """(function, column) for every column the runbook selects from the two functions."""
    text = RUNBOOK.read_text()
    reads = []
    for columns, function in re.findall(
            r"SELECT\s+((?:(?!\bFROM\b|\bSELECT\b|;).)+?)\s+FROM\s+messenger\.(call_reaper_metrics|call_reaper_status)\(\)",
            text, re.DOTALL):
        for column in columns.split(","):
            name = re.sub(r"\s+AS\s+\w+$", "", column.strip(), flags=re.IGNORECASE).split(".")[-1]
            if name != "*":
                reads.append((function, name))
    return reads


def test_the_runbook_reads_only_columns_the_released_functions_have():
    reads = runbook_reads()
    assert ("call_reaper_metrics", "last_run_at") in reads and ("call_reaper_status", "paused") in reads
    missing = [(f, c) for f, c in reads if c not in released_columns(f)]
    assert missing == [], f"the runbook reads columns 2.0.0 lacks: {missing}"


def job_role_grants(conn: psycopg.Connection) -> list[tuple[str, str, str]]:
    """(kind, object, privilege) the job role holds on schema messenger and what is in it."""
    return conn.execute("""
        SELECT 'schema', n.nspname::text, a.privilege_type
          FROM pg_namespace AS n, aclexplode(n.nspacl) AS a
         WHERE n.nspname = 'messenger' AND a.grantee = %(role)s::regrole
        UNION ALL
        SELECT 'routine', p.oid::regprocedure::text, a.privilege_type
          FROM pg_proc AS p, aclexplode(p.proacl) AS a
         WHERE p.pronamespace = 'messenger'::regnamespace AND a.grantee = %(role)s::regrole
        UNION ALL
        SELECT 'relation', c.oid::regclass::text, a.privilege_type
          FROM pg_class AS c, aclexplode(c.relacl) AS a
         WHERE c.relnamespace = 'messenger'::regnamespace AND a.grantee = %(role)s::regrole
        UNION ALL
        SELECT 'column', c.oid::regclass::text || '.' || t.attname, a.privilege_type
          FROM pg_attribute AS t JOIN pg_class AS c ON c.oid = t.attrelid, aclexplode(t.attacl) AS a
         WHERE c.relnamespace = 'messenger'::regnamespace AND a.grantee = %(role)s::regrole
         ORDER BY 1, 2, 3""", {"role": JOB_ROLE}).fetchall()


def runbook_job_role_grants() -> str:
    section = RUNBOOK.read_text().split("\n### What the job role may do\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sql\n(.*?)```", section, re.DOTALL)
    assert block and "GRANT" in block[1], "no GRANT block under 'What the job role may do'"
    return block[1]


@pytest.mark.parametrize("revoke", [
    "REVOKE ALL ON SCHEMA messenger FROM {role}",
    "REVOKE ALL ON ALL ROUTINES IN SCHEMA messenger FROM {role}",
    "REVOKE ALL ON ALL TABLES IN SCHEMA messenger FROM {role}",   # and their columns'
])
def test_the_runbooks_grants_give_the_job_role_back_what_it_lost(conn, revoke):
    before = job_role_grants(conn)
    assert ("routine", "messenger.run_call_reaper_ticks(timestamp with time zone)", "EXECUTE") in before
    with conn.transaction(force_rollback=True):
        conn.execute(revoke.format(role=JOB_ROLE))
        lost = set(before) - set(job_role_grants(conn))
        assert lost, f"{revoke} took nothing"
        conn.execute(runbook_job_role_grants())
        assert job_role_grants(conn) == before
