"""PROFILE=1: pg_stat_statements over the first reaper drain, and EXPLAINs of its statements."""

from __future__ import annotations

import re
import uuid

import psycopg
import statements as st
from common import AS_OF, Run

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


# The cycle's statements as the deployed routines hold them (messenger._reap_pair_sql reads each
# one from its routine: no copy here can drift), with the names the routines' EXECUTE passes.
CLAIM_VARS = ("v_status", "p_lanes.cutoff", "v_from", "v_to", "p_hi_key", "p_hi_id", "p_taken", "p_lanes.quarantined",
              "p_limit")
APPLY_VARS = ("v_to", "v_end_reason", "p_run.as_of", "v_ids", "v_started", "v_due", "v_from", "v_kind",
              "v_target_kind", "p_run.run_id", "v_both")


def _statement(c: psycopg.Connection, routine: str, name: str, variables: tuple[str, ...]) -> str:
    return c.execute("SELECT messenger._reap_pair_sql(%s, %s, 'messenger.call_sessions', 'messenger.realtime_outbox',"
                     " VARIADIC %s)", (routine, name, list(variables))).fetchone()[0]


def _bound(stmt: str, variables: tuple[str, ...], consts: dict[str, str]) -> str:
    """The statement with the variables of consts as literals and the others renumbered $1, $2, ..."""
    rest = [v for v in variables if v not in consts]
    return re.sub(r"\$(\d+)\b", lambda m: consts.get(variables[int(m[1]) - 1])
                  or f"${rest.index(variables[int(m[1]) - 1]) + 1}", stmt)


def explain_apply(run: Run, batch: int) -> None:
    """EXPLAIN (ANALYZE, BUFFERS) of _reap_claim_lane's claim-and-count statement and of
    _reap_close's statement with their generic plans (what the functions run under
    plan_cache_mode = force_generic_plan), one batch of each phase, rolled back."""
    # Parameters bound client-side: EXPLAIN EXECUTE cannot infer the types of bind parameters.
    with run.connect(cursor_factory=psycopg.ClientCursor) as c:
        claim_sql = _statement(c, "messenger._reap_claim_lane", "claim", CLAIM_VARS)
        apply_sql = _statement(c, "messenger._reap_close", "close", APPLY_VARS)
        c.execute("SET plan_cache_mode = force_generic_plan")
        c.commit()  # the SET must outlive the rollbacks below
        for ph in run.phases:
            try:
                _explain_phase(c, ph, batch, apply_sql, claim_sql)
            except psycopg.Error as e:
                c.rollback()
                print(f"\nEXPLAIN of {ph.phase} skipped: {e}")


def _explain_phase(c: psycopg.Connection, ph, batch: int, apply_sql: str, claim_sql: str) -> None:
    # A healthy lane's claim-and-count: the whole due range of the phase, nothing quarantined.
    c.execute(f"PREPARE bench_claim_{ph.phase} (text, timestamptz, timestamptz, timestamptz, timestamptz, uuid, uuid[],"
              " boolean, integer) AS " + claim_sql)
    c.execute("SET LOCAL enable_sort = off")  # _reap_claim_lane's own settings
    c.execute("SET LOCAL jit = off")
    _print(f"_reap_claim_lane's claim-and-count statement, generic plan, {ph.phase}", c.execute(
        f"EXPLAIN (ANALYZE, BUFFERS) EXECUTE bench_claim_{ph.phase}"
        " (%s::text, %s::timestamptz, '-infinity', %s::timestamptz, %s::timestamptz, %s::uuid, '{}'::uuid[], false, %s::integer)",
        (ph.status, ph.cutoff, ph.cutoff, ph.cutoff, UUID_MAX, batch)).fetchall())
    c.execute("SET LOCAL enable_sort = on")  # _reap_close's
    # The function's constants for the phase: what its DECLARE section sets from p_phase.
    consts = {"v_from": st.lit(ph.status), "v_to": st.lit(ph.new_status), "v_end_reason": st.lit(ph.end_reason),
              "v_kind": st.lit(ph.outbox_kind), "v_target_kind": st.lit("User"), "v_both": str(ph.both_parties).lower()}
    c.execute(f"PREPARE bench_apply_{ph.phase} (timestamptz, uuid[], timestamptz[], timestamptz[], uuid)"
              " AS " + _bound(apply_sql, APPLY_VARS, consts))
    rows = c.execute(st.claim(ph, "messenger.call_due_key(s.status, s.started_at, s.updated_at), s.call_id, s.started_at"),
                     {f"cutoff_{ph.phase}": ph.cutoff, "batch": batch}).fetchall()
    _print(f"_reap_close's statement, generic plan, {ph.phase}, {len(rows)} calls", c.execute(
        f"EXPLAIN (ANALYZE, BUFFERS) EXECUTE bench_apply_{ph.phase}"
        " (%s::timestamptz, %s::uuid[], %s::timestamptz[], %s::timestamptz[], %s::uuid)",
        (AS_OF, [r[1] for r in rows], [r[2] for r in rows], [r[0] + ph.timeout for r in rows], uuid.uuid4())).fetchall())
    c.rollback()


def _print(title: str, plan: list) -> None:
    print(f"\nEXPLAIN (ANALYZE, BUFFERS) of {title}:")
    for (line,) in plan:
        print("  " + line)
