"""Hostile arguments: zero, negative, huge and infinite values of every argument raise
SQLSTATE 22023 and change nothing in any table the reaper touches; NULL means "the
configured value". Overdue calls exist, so a wrongly accepted cycle would close them (and
any accepted cycle writes a ledger row): the checksums would differ.

Infinite intervals exist from PostgreSQL 17 on: there they are refused like the others; on 15
and 16 the server must have none (its interval input refuses 'infinity'), so the case cannot
arise. Not representable, so not tested: an infinite integer.
"""

from datetime import timedelta

import pytest
from psycopg import errors
from reaper_support import FUTURE, STALE, answered, checksum, reap, ringing

TYPES = {"batch_size": "integer", "ring_timeout": "interval", "stale_timeout": "interval",
         "as_of": "timestamptz"}

HOSTILE = [
    ("batch_size", "0"),
    ("batch_size", "-1"),
    ("batch_size", "-2147483648"),
    ("batch_size", "10001"),
    ("batch_size", "2147483647"),
    ("ring_timeout", "0"),
    ("ring_timeout", "-1 microsecond"),
    ("ring_timeout", "-45 seconds"),
    ("ring_timeout", "1 day -86400 seconds"),  # zero in disguise
    ("ring_timeout", "1 day 1 microsecond"),
    ("ring_timeout", "178000000 years"),
    ("ring_timeout", "-178000000 years"),
    ("stale_timeout", "0"),
    ("stale_timeout", "-2 hours"),
    ("stale_timeout", "1 mon -30 days"),
    ("stale_timeout", "30 days 1 microsecond"),
    ("stale_timeout", "178000000 years"),
    ("as_of", "1970-01-01 00:00:00+00"),  # zero: the epoch
    ("as_of", "1969-12-31 23:59:59.999999+00"),
    ("as_of", "4713-01-01 00:00:00+00 BC"),
    ("as_of", "10000-01-01 00:00:00+00"),
    ("as_of", "294276-12-31 23:59:59.999999+00"),
    ("as_of", "infinity"),
    ("as_of", "-infinity"),
]


@pytest.fixture
def overdue(calls):
    return calls.add([ringing(FUTURE - timedelta(hours=1)), answered(FUTURE - 2 * STALE)])


@pytest.mark.parametrize(("arg", "value"), HOSTILE, ids=[f"{a}={v}" for a, v in HOSTILE])
def test_hostile_argument_raises_22023_and_changes_nothing(arg, value, conn, overdue,
                                                           reaper_paused):
    others = {"as_of": FUTURE} if arg != "as_of" else {}
    before = checksum(conn)
    with pytest.raises(errors.InvalidParameterValue) as raised:
        call(conn, arg, value, others)
    assert raised.value.sqlstate == "22023"
    assert arg in raised.value.diag.message_primary, "the message names the argument"
    assert checksum(conn) == before


def call(conn, arg, value, others):
    """The reaper with `arg` cast from text (so 'infinity' and BC dates pass as they are)."""
    params = [value, *others.values()]
    named = "".join(f", {k} => %s" for k in others)
    return conn.execute(
        f"SELECT * FROM messenger.reap_call_timeouts({arg} => %s::{TYPES[arg]}{named})", params)


@pytest.mark.parametrize("arg", list(TYPES))
def test_null_argument_means_the_configured_value(arg, conn, calls, overdue, reaper_paused):
    if arg == "as_of":
        # A cycle on the clock that closes nothing records no ledger row: give it a call due now.
        now = conn.execute("SELECT now()").fetchone()[0]
        calls.add([ringing(now - timedelta(hours=1))])
    settings = conn.execute(
        "SELECT batch_size, ring_timeout, stale_timeout FROM messenger.call_reaper_settings"
    ).fetchone()
    args = {"as_of": FUTURE, "batch_size": 3, "ring_timeout": timedelta(seconds=30),
            "stale_timeout": timedelta(hours=1)}
    args[arg] = None
    before = conn.execute("SELECT clock_timestamp()").fetchone()[0]
    result = reap(conn, **args)
    after = conn.execute("SELECT clock_timestamp()").fetchone()[0]
    assert result["result"] == "completed"
    used = conn.execute(
        "SELECT batch_size, ring_timeout, stale_timeout, as_of FROM messenger.call_reaper_runs"
        " WHERE run_id = %s", [result["run_id"]]).fetchone()
    expected = (3, timedelta(seconds=30), timedelta(hours=1), FUTURE)
    for i, name in enumerate(TYPES):
        if name == arg and name != "as_of":
            assert used[i] == settings[i], f"NULL {name} took the configured value"
        elif name == arg:
            assert before <= used[i] <= after, "NULL as_of is the current time"
        else:
            assert used[i] == expected[i]


INFINITE = [(arg, sign + "infinity") for arg in ("ring_timeout", "stale_timeout") for sign in ("", "-")]


@pytest.mark.parametrize(("arg", "value"), INFINITE, ids=[f"{a}={v}" for a, v in INFINITE])
def test_infinite_interval_is_refused_where_the_server_has_one(arg, value, conn, overdue,
                                                               reaper_paused):
    version = conn.execute("SELECT current_setting('server_version_num')::integer").fetchone()[0]
    if version < 170000:
        # Nothing to refuse: the server cannot even write the value.
        with pytest.raises(errors.InvalidDatetimeFormat):
            conn.execute("SELECT %s::interval", [value])
        return
    before = checksum(conn)
    with pytest.raises(errors.InvalidParameterValue) as raised:
        call(conn, arg, value, {"as_of": FUTURE})
    assert arg in raised.value.diag.message_primary, "the message names the argument"
    assert checksum(conn) == before
