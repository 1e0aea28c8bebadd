"""The reaper's phases as deployed (messenger.call_reaper_phases()), read once per run.

The bare-statement contestants and the peer build their SQL from these rows, so they always
apply the reaper's own rule: which status each phase closes, what it becomes, which outbox row
goes to whom, and how long it waits (the settings column its timeout_setting names).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import psycopg
from common import AS_OF
from psycopg.rows import dict_row

RECIPIENTS = ("caller", "both")


@dataclass(frozen=True)
class Phase:
    phase: str
    status: str
    new_status: str
    end_reason: str
    outbox_kind: str
    recipients: str
    timeout: dt.timedelta

    @property
    def cutoff(self) -> dt.datetime:
        """A call of this phase is due at AS_OF when messenger.call_is_due(..., cutoff) holds."""
        return AS_OF - self.timeout

    @property
    def both_parties(self) -> bool:
        return self.recipients == "both"

    @property
    def outbox_rows_per_call(self) -> int:
        return 2 if self.both_parties else 1


def load(conn: psycopg.Connection) -> list[Phase]:
    rows = conn.execute("SELECT phase, status, new_status, end_reason, outbox_kind, recipients, timeout_setting"
                        "  FROM messenger.call_reaper_phases() ORDER BY phase").fetchall()
    settings = conn.cursor(row_factory=dict_row).execute("SELECT * FROM messenger.call_reaper_settings").fetchone()
    phases = []
    for phase, status, new_status, end_reason, kind, recipients, setting in rows:
        if recipients not in RECIPIENTS:
            raise SystemExit(f"bench: messenger.call_reaper_phases() has recipients it does not know: {phase} ({recipients})")
        timeout = settings[setting]
        phases.append(Phase(phase, status, new_status, end_reason, kind, recipients, timeout))
    # The statements tell a closed call's phase by its new status (RETURNING sees only that).
    if len({p.new_status for p in phases}) != len(phases) or len({p.status for p in phases}) != len(phases):
        raise SystemExit("bench: two phases share a status; the bench's statements cannot tell them apart")
    return phases


def by_status(phases: list[Phase], status: str) -> Phase:
    """The phase closing calls in this status (the product's statements know their own)."""
    return next(p for p in phases if p.status == status)
