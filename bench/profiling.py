"""PROFILE=1: pg_stat_statements over the first reaper drain, and EXPLAINs of its statements."""

from __future__ import annotations

import re
import uuid

import psycopg
import statements as st
from common import AS_OF, REPO, Run

UUID_MAX = uuid.UUID("ffffffff-ffff-ffff-ffff-ffffffffffff")


def reset(run: Run) -> None:
    run.profiling = run.statements_reset()


def show(run: Run, name: str) -> None:
    if not run.profiling:
        return
    rows = run.admin.execute(
        "SELECT round(total_exec_time::numeric, 1), calls, rows, shared_blks_hit + shared_blks_read,"
        "       left(regexp_replace(query, '\\s+', ' ', 'g'), 110)"
        "  FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
        " ORDER BY total_exec_time DESC LIMIT 30").fetchall()
    print(f"\nProfile of {name} (pg_stat_statements, track=all):")
    print(f"{'total ms':>10} {'calls':>7} {'rows':>8} {'buffers':>9}  query")
    for ms, calls, nrows, bufs, q in rows:
        print(f"{ms:>10} {calls:>7} {nrows:>8} {bufs:>9}  {q}")


def _numbered(stmt: str, variables: tuple[str, ...]) -> str:
    """A statement cut out of a deploy script (the deployed text, not a copy that could drift)
    with its PL/pgSQL variables turned into $1, $2, ..."""
    for i, var in enumerate(variables, 1):
        stmt = re.sub(rf"\b{var}\b", f"${i}", stmt)
    return stmt


def explain_apply(run: Run, batch: int) -> None:
    """EXPLAIN (ANALYZE, BUFFERS) of _reap_claim_lane's claim-and-count statement and of
    _reap_apply's statement with their generic plans (what the functions run under
    plan_cache_mode = force_generic_plan), one batch of each phase, rolled back."""
    functions = REPO / "deploy" / "functions"
    # The default pair's static statement (the first RETURN QUERY, up to its semicolon).
    apply_src = (functions / "_reap_apply.sql").read_text().split("\nRETURN QUERY\n", 1)[1].split(";\n", 1)[0]
    apply_sql = _numbered(apply_src.strip().rstrip(";"),
                          ("p_phase", "p_call_ids", "p_started_at", "p_due_at", "p_run_id", "p_as_of"))
    lane_src = (functions / "_reap_claim_lane.sql").read_text()
    claim_src = lane_src.split("    WITH claimed AS MATERIALIZED (", 1)[1].split("      FROM bound AS b;", 1)[0]
    select = claim_src.rsplit("      INTO ids,", 1)[0]
    claim_sql = _numbered("WITH claimed AS MATERIALIZED (" + select + "      FROM bound AS b",
                          ("v_status", "p_cutoff", "p_lo_key", "p_lo_id", "p_hi_key", "p_hi_id", "p_taken", "p_quarantined",
                           "p_limit"))
    # Parameters bound client-side: EXPLAIN EXECUTE cannot infer the types of bind parameters.
    with run.connect(cursor_factory=psycopg.ClientCursor) as c:
        c.execute("SET plan_cache_mode = force_generic_plan")
        c.commit()  # the SET must outlive the rollbacks below
        for ph in run.phases:
            try:
                _explain_phase(c, ph, batch, apply_sql, claim_sql)
            except psycopg.Error as e:  # the deploy's text moved under the cut: say so, go on
                c.rollback()
                print(f"\nEXPLAIN of {ph.phase} skipped: {e}")


def _explain_phase(c: psycopg.Connection, ph, batch: int, apply_sql: str, claim_sql: str) -> None:
    # A healthy lane's claim-and-count: the whole due range of the phase, nothing quarantined.
    c.execute(f"PREPARE bench_claim_{ph.phase} (text, timestamptz, timestamptz, uuid, timestamptz, uuid, uuid[], boolean, integer)"
              " AS " + claim_sql)
    c.execute("SET LOCAL enable_sort = off")  # _reap_claim_lane's own settings
    c.execute("SET LOCAL jit = off")
    _print(f"_reap_claim_lane's claim-and-count statement, generic plan, {ph.phase}", c.execute(
        f"EXPLAIN (ANALYZE, BUFFERS) EXECUTE bench_claim_{ph.phase}"
        " (%s::text, %s::timestamptz, '-infinity', %s::uuid, %s::timestamptz, %s::uuid, '{}'::uuid[], false, %s::integer)",
        (ph.status, ph.cutoff, UUID_MAX, ph.cutoff, UUID_MAX, batch)).fetchall())
    c.execute("SET LOCAL enable_sort = on")  # _reap_apply's
    # The function's constants for the phase: what its DECLARE section sets from p_phase.
    consts = {"v_from": ph.status, "v_to": ph.new_status, "v_end_reason": ph.end_reason,
              "v_kind": ph.outbox_kind, "v_target_kind": "User"}
    phase_sql = apply_sql
    for var, value in consts.items():
        phase_sql = re.sub(rf"\b{var}\b", st.lit(value), phase_sql)
    c.execute(f"PREPARE bench_apply_{ph.phase} (text, uuid[], timestamptz[], timestamptz[], uuid, timestamptz)"
              " AS " + phase_sql)
    rows = c.execute(st.claim(ph, "messenger.call_due_key(s.status, s.started_at, s.updated_at), s.call_id, s.started_at"),
                     {f"cutoff_{ph.phase}": ph.cutoff, "batch": batch}).fetchall()
    _print(f"_reap_apply's statement, generic plan, {ph.phase}, {len(rows)} calls", c.execute(
        f"EXPLAIN (ANALYZE, BUFFERS) EXECUTE bench_apply_{ph.phase}"
        " (%s::text, %s::uuid[], %s::timestamptz[], %s::timestamptz[], %s::uuid, %s::timestamptz)",
        (ph.phase, [r[1] for r in rows], [r[2] for r in rows], [r[0] + ph.timeout for r in rows],
         uuid.uuid4(), AS_OF)).fetchall())
    c.rollback()


def _print(title: str, plan: list) -> None:
    print(f"\nEXPLAIN (ANALYZE, BUFFERS) of {title}:")
    for (line,) in plan:
        print("  " + line)
