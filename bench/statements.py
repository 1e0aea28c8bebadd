"""SQL of the contestants that are not the reaper, built from the deployed phases.

The bound and the batched bound are one builder: the same close-and-push statement, fed either
by the whole due range of every phase (bound) or by a SKIP LOCKED claim of one batch per phase
(batched bound), so the gap between them is only the batching. The peer's statements are the
ones an ORM worker sends, one per call and per outbox row.

Placeholders: %(as_of)s, %(run_id)s, %(batch)s and %(cutoff_<phase>)s (params()).
"""

from __future__ import annotations

import uuid

from common import AS_OF
from phases import Phase

DUE = "messenger.call_is_due({a}.status, {a}.started_at, {a}.updated_at, %(cutoff_{phase})s)"


def lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def params(phases: list[Phase], batch: int | None = None) -> dict:
    p = {"as_of": AS_OF, "run_id": uuid.uuid4(), "batch": batch}
    p.update({f"cutoff_{ph.phase}": ph.cutoff for ph in phases})
    return p


def due(ph: Phase, a: str) -> str:
    """Calls of this phase due at AS_OF (the reaper's rule): a range of the claims' index."""
    return f"{a}.status = {lit(ph.status)} AND {DUE.format(a=a, phase=ph.phase)}"


def claim(ph: Phase, columns: str, limit: str = "%(batch)s") -> str:
    """One batch of the phase in the reaper's order (started_at), rows the product holds passed over."""
    return (f"SELECT {columns} FROM messenger.call_sessions AS s WHERE {due(ph, 's')}"
            f" ORDER BY s.started_at, s.call_id LIMIT {limit} FOR NO KEY UPDATE SKIP LOCKED")


def _case(phases: list[Phase], expr: str, src: str, dst: str) -> str:
    whens = " ".join(f"WHEN {lit(getattr(p, src))} THEN {lit(getattr(p, dst))}" for p in phases)
    return f"CASE {expr} {whens} END"


def close_and_push(phases: list[Phase], batched: bool) -> str:
    """One statement closing calls and writing their outbox rows; returns the calls closed."""
    ctes = []
    if batched:
        for i, ph in enumerate(phases):
            ctes.append(f"claim_{i} AS ({claim(ph, 's.call_id, s.started_at')})")
        union = " UNION ALL ".join(f"SELECT call_id, started_at FROM claim_{i}" for i in range(len(phases)))
        ctes.append(f"claimed AS ({union})")
        source = ("FROM claimed AS k WHERE c.call_id = k.call_id AND c.started_at = k.started_at"
                  f" AND c.status IN ({', '.join(lit(p.status) for p in phases)})")
    else:
        source = "WHERE " + " OR ".join(f"({due(ph, 'c')})" for ph in phases)
    both = [lit(p.new_status) for p in phases if p.both_parties]
    # The callee gets a row only in a phase for both parties, and only once if it is the caller.
    second = f"x.status IN ({', '.join(both)}) AND x.callee_user_id <> x.caller_user_id" if both else "false"
    ctes.append(f"""closed AS (
    UPDATE messenger.call_sessions AS c
       SET status = {_case(phases, 'c.status', 'status', 'new_status')},
           end_reason = {_case(phases, 'c.status', 'status', 'end_reason')},
           ended_at = %(as_of)s, updated_at = %(as_of)s, duration_seconds = NULL
     {source}
    RETURNING c.call_id, c.caller_user_id, c.callee_user_id, c.media_type, c.status)""")
    ctes.append(f"""pushed AS (
    INSERT INTO messenger.realtime_outbox
           (kind, target_kind, target_id, reference_id, payload, correlation_id, created_at)
    SELECT {_case(phases, 'x.status', 'new_status', 'outbox_kind')}, 'User', 'user:' || r.u, x.call_id,
           jsonb_build_object('callId', x.call_id, 'status', x.status, 'mediaType', x.media_type),
           %(run_id)s, %(as_of)s
      FROM closed AS x
     CROSS JOIN LATERAL (VALUES (1, x.caller_user_id), (2, x.callee_user_id)) AS r (n, u)
     WHERE r.n = 1 OR ({second}))""")
    return "WITH " + ",\n".join(ctes) + "\nSELECT count(*) FROM closed"


# The peer's statements, as an ORM-based worker issues them: the claim per phase (claim()),
# then by the entity's key: call_id, or (call_id, started_at) once partitioned.
PEER_COLUMNS = "s.call_id, s.caller_user_id, s.callee_user_id, s.media_type, s.started_at"
PEER_UPDATE = """
    UPDATE messenger.call_sessions
       SET status = %s, end_reason = %s, ended_at = %s, updated_at = %s, duration_seconds = NULL
     WHERE call_id = %s AND status = %s
    RETURNING call_id"""
PEER_UPDATE_PARTITIONED = """
    UPDATE messenger.call_sessions
       SET status = %s, end_reason = %s, ended_at = %s, updated_at = %s, duration_seconds = NULL
     WHERE call_id = %s AND started_at = %s AND status = %s
    RETURNING call_id"""
PEER_INSERT = """
    INSERT INTO messenger.realtime_outbox
           (kind, target_kind, target_id, reference_id, payload, correlation_id, created_at)
    VALUES (%s, 'User', %s, %s, %s::jsonb, %s, %s)"""
