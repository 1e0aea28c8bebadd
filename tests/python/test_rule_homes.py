"""One home per rule: the reaper's rules are each defined once, in SQL, and what the tests and
the bench hold is read from there or checked against it here.

- the phase rule, messenger.call_reaper_phases(): a cycle over one due call per phase does
  exactly what the rule's rows say (status, end_reason, outbox kind, recipients), and times
  each phase by the setting its timeout_setting names;
- the SQLSTATE classes, messenger.call_reaper_error_class(): the states test_error_classes.py
  raises as transient are classed so, and the data ones as data;
- the pg_cron job names, messenger.call_reaper_job_name(): reaper_facts.py's copies for the
  Python side (read at import time, before any connection) equal it, and the jobs the deploy
  scheduled carry them;
- the bench reads those homes in SQL itself and never the tests' modules.
"""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta
from pathlib import Path

from psycopg import sql
from psycopg.rows import dict_row
from reaper_facts import JOB_NAME, PURGE_JOB_NAME, WARDEN_JOB_NAME
from reaper_support import FUTURE, answered, outbox_rows, reap, ringing
from test_error_classes import SYSTEMIC


def test_a_cycle_does_what_the_phase_rule_says(conn, calls, reaper_paused):
    with conn.cursor(row_factory=dict_row) as cur:
        rule = {r["status"]: r for r in cur.execute("SELECT * FROM messenger.call_reaper_phases()")}
    assert set(rule) == {"Ringing", "Answered"}
    made = calls.add([ringing(FUTURE - timedelta(minutes=5)), answered(FUTURE - timedelta(hours=3))])
    reap(conn, as_of=FUTURE + timedelta(hours=1))
    pushed = outbox_rows(conn, [c["call_id"] for c in made])
    for call in made:
        r = rule[call["status"]]
        with conn.cursor(row_factory=dict_row) as cur:
            after = cur.execute("SELECT status, end_reason FROM messenger.call_sessions WHERE call_id = %s",
                                [call["call_id"]]).fetchone()
        assert (after["status"], after["end_reason"]) == (r["new_status"], r["end_reason"]), r["phase"]
        targets = sorted(p["target_id"] for p in pushed if p["reference_id"] == call["call_id"])
        parties = [call["caller_user_id"]] if r["recipients"] == "caller" else \
            [call["caller_user_id"], call["callee_user_id"]]
        assert targets == sorted(f"user:{u}" for u in parties), r["phase"]
        assert {p["kind"] for p in pushed if p["reference_id"] == call["call_id"]} == {r["outbox_kind"]}


def test_a_cycle_times_each_phase_by_the_setting_the_rule_names(conn, calls, reaper_paused):
    # One call per phase, due under the default windows (45 s, 2 h). Raising the setting a
    # phase's timeout_setting names past its call's age keeps exactly that phase's call open.
    with conn.cursor(row_factory=dict_row) as cur:
        rule = cur.execute("SELECT phase, status, timeout_setting FROM messenger.call_reaper_phases()").fetchall()
    assert len({r["timeout_setting"] for r in rule}) == len(rule) == 2
    for r in rule:
        made = calls.add([ringing(FUTURE - timedelta(minutes=5)), answered(FUTURE - timedelta(hours=3))])
        with conn.transaction(force_rollback=True):
            conn.execute(sql.SQL("UPDATE messenger.call_reaper_settings SET {} = interval '24 hours'")
                         .format(sql.Identifier(r["timeout_setting"])))
            reap(conn, as_of=FUTURE)
            with conn.cursor(row_factory=dict_row) as cur:
                after = {c["status"]: a["status"] for c in made for a in cur.execute(
                    "SELECT status FROM messenger.call_sessions WHERE call_id = %s", [c["call_id"]]).fetchall()}
        still_open = {before for before, now in after.items() if before == now}
        assert still_open == {r["status"]}, f"{r['phase']} is timed by {r['timeout_setting']}"


def test_the_error_classes_the_tests_raise_are_the_ones_sql_defines(conn):
    classes = dict(conn.execute(
        "SELECT s, messenger.call_reaper_error_class(s) FROM unnest(%s::text[]) AS s",
        [SYSTEMIC + ["22012", "23505", "P0001", "P0002"]]).fetchall())
    assert {s for s, c in classes.items() if c == "transient"} == set(SYSTEMIC)
    assert [classes[s] for s in ("22012", "23505", "P0001", "P0002")] == ["data", "data", "data", "other"]


def test_the_job_names_the_tests_use_are_the_sql_ones_and_scheduled(conn):
    home = conn.execute("SELECT messenger.call_reaper_job_name('reaper'), messenger.call_reaper_job_name('purge'),"
                        " messenger.call_reaper_job_name('warden')").fetchone()
    assert home == (JOB_NAME, PURGE_JOB_NAME, WARDEN_JOB_NAME)
    names = {r[0] for r in conn.execute("SELECT jobname FROM cron.job")}
    assert set(home) <= names


def test_the_bench_imports_nothing_from_the_tests():
    # Every bench module imported as `make bench` runs them (from bench/): none may put the tests'
    # directory on sys.path to borrow a name the SQL already holds.
    bench = Path(__file__).resolve().parents[2] / "bench"
    modules = sorted(p.stem for p in bench.glob("*.py"))
    probe = (f"import sys; import {', '.join(modules)}; "
             "print([p for p in sys.path if p.rstrip('/').endswith('tests/python')])")
    out = subprocess.run([sys.executable, "-c", probe], cwd=bench, capture_output=True, text=True, check=True)
    assert len(modules) > 10 and out.stdout.strip() == "[]"
