"""The reaper's routines never JIT-compile their statements, whatever the server's JIT settings.

Every statement the reaper runs is an index range scan or a key lookup that takes a millisecond,
but the planner's estimates for the one-row state tables come from their page counts until
autovacuum analyzes them, and a few hundred updates bloat those pages: the exporter's metrics
statement was once estimated at about 50 million and spent 1.4 s compiling on every scrape, past
the exporter's statement timeout. So each entry point sets jit = off for what it runs.

Shown with auto_explain, loaded in this session only and sending its plans to the client: with
jit_above_cost = 0 a statement inside a function is compiled unless that function turned JIT
off. The control statement proves that this server compiles (its JIT provider is present) and
that a nested statement's plan is seen here. Needs LOAD (a superuser) and the client's notices,
hence pytest.
"""

from __future__ import annotations

from datetime import timedelta

import psycopg
import pytest
from reaper_support import FUTURE, answered, ringing

# Each runs every statement its entry point runs (the cycle with a call in each phase closed).
ENTRY_POINTS = {
    "call_reaper_metrics": "SELECT * FROM messenger.call_reaper_metrics()",
    "call_reaper_status": "SELECT * FROM messenger.call_reaper_status()",
    "preview_call_timeouts": "SELECT * FROM messenger.preview_call_timeouts(as_of => %(as_of)s)",
    "reap_call_timeouts": "SELECT * FROM messenger.reap_call_timeouts(as_of => %(as_of)s)",
    # A cutoff before any run: it walks the ledger and pg_cron's history and deletes nothing.
    "purge_call_reaper_history":
        "SELECT * FROM messenger.purge_call_reaper_history(as_of => '2000-01-01 00:00+00')",
}
CONTROL = "DO $$ BEGIN PERFORM count(*) FROM messenger.call_sessions WHERE status = 'Ringing'; END $$"


def compiled(dsn: str, statement: str, args: dict | None = None) -> list[str]:
    """The contexts of the nested statements that a fresh session JIT-compiled for statement."""
    seen = []
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("LOAD 'auto_explain'")
        for setting, value in (("auto_explain.log_min_duration", "0"),
                               ("auto_explain.log_nested_statements", "on"),
                               ("jit", "on"), ("jit_above_cost", "0"),
                               # Compiling without inlining or optimizing is enough to be seen.
                               ("jit_inline_above_cost", "-1"), ("jit_optimize_above_cost", "-1"),
                               ("client_min_messages", "log")):
            c.execute("SELECT set_config(%s, %s, false)", [setting, value])
        # The caller's own statement is planned with the caller's settings, so only nested
        # statements (those with a context) are the routines'.
        c.add_notice_handler(lambda d: seen.append(d.context) if d.context and "JIT:" in (d.message_primary or "") else None)
        c.execute(statement, args if "%(" in statement else None)
    return seen


def test_the_control_statement_is_compiled(dsn):
    assert compiled(dsn, CONTROL), "this server did not JIT-compile a nested statement at jit_above_cost = 0"


@pytest.mark.parametrize("routine", ENTRY_POINTS)
def test_an_entry_point_compiles_nothing(dsn, calls, reaper_paused, routine):
    as_of = FUTURE + timedelta(hours=1)
    calls.add([ringing(FUTURE - timedelta(minutes=5)), answered(FUTURE - timedelta(hours=3))])
    assert compiled(dsn, ENTRY_POINTS[routine], {"as_of": as_of}) == []
