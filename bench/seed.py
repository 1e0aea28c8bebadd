"""The bench's data: a year of history, an overdue backlog, live calls, and the resets between
measurements.

Between drains the backlog is reset in place (delete the bench's recent calls, re-insert them,
VACUUM with INDEX_CLEANUP ON) rather than restored from a template: the history is never
touched, so a reset costs the same at 1M and 10M, and VACUUM leaves no dead index entries behind
to slow the next contestant down.
"""

from __future__ import annotations

import datetime as dt
import sys
import time

from common import AS_OF, HISTORY_SPAN_DAYS, RECENT, Run, log

HISTORY_SQL = """
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, end_reason,
        started_at, answered_at, ended_at, updated_at, duration_seconds)
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(),
       CASE WHEN t.i %% 3 = 0 THEN 'Video' ELSE 'Audio' END,
       k.status, k.end_reason, t.started_at,
       CASE WHEN k.answered THEN t.started_at + interval '5 seconds' END,
       t.started_at + interval '65 seconds', t.started_at + interval '65 seconds',
       CASE WHEN k.status = 'Ended' THEN 60 END
  FROM (SELECT g.i, %(end)s::timestamptz - random() * %(span)s::interval AS started_at
          FROM generate_series(1, %(n)s) AS g (i)) AS t (i, started_at)
  JOIN (VALUES (0, 'Ended', 'Hangup', true), (1, 'Ended', 'Hangup', true), (2, 'Ended', 'Hangup', true),
               (3, 'Ended', 'Hangup', true), (4, 'Ended', 'Hangup', true), (5, 'Ended', 'Hangup', true),
               (6, 'Ended', 'Hangup', true), (7, 'Missed', 'Timeout', false),
               (8, 'Declined', 'Declined', false), (9, 'Failed', 'Error', true))
       AS k (m, status, end_reason, answered) ON k.m = t.i %% 10
"""

# Overdue Ringing calls: started between 6 h and 46 s before as_of.
RINGING_DUE_SQL = """
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, updated_at)
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing', t.s, t.s
  FROM (SELECT %(as_of)s::timestamptz - interval '46 seconds' - random() * interval '6 hours'
          FROM generate_series(1, %(n)s)) AS t (s)
"""

# Stale Answered calls: last progress between 1 day + 2 h and 2 h + 1 s before as_of.
ANSWERED_STALE_SQL = """
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Video', 'Answered',
       t.u - interval '10 minutes', t.u - interval '9 minutes', t.u
  FROM (SELECT %(as_of)s::timestamptz - interval '2 hours 1 second' - random() * interval '1 day'
          FROM generate_series(1, %(n)s)) AS t (u)
"""

# Live calls nobody may touch: Ringing for < 40 s, Answered with progress in the last 110 min; a
# share PW_LONG of the Answered ones started before the stale window (still talking after 2 h:
# the calls the stale-answered claim, keyed on started_at, walks every cycle).
LIVE_SQL = """
INSERT INTO messenger.call_sessions
       (call_id, caller_user_id, callee_user_id, media_type, status, started_at, answered_at, updated_at)
SELECT gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'Audio', r.status,
       r.s, CASE WHEN r.status = 'Answered' THEN r.s + interval '5 seconds' END, r.u
  FROM (SELECT CASE WHEN g.i %% 2 = 0 THEN 'Ringing' ELSE 'Answered' END, random()
          FROM generate_series(1, %(n)s) AS g (i)) AS p (status, x)
 CROSS JOIN LATERAL (SELECT p.status,
                            CASE WHEN p.status = 'Ringing' THEN %(as_of)s::timestamptz - p.x * interval '40 seconds'
                                 WHEN random() < %(long)s
                                 THEN %(as_of)s::timestamptz - interval '2 hours 10 minutes' - p.x * interval '3 hours'
                                 ELSE %(as_of)s::timestamptz - p.x * interval '110 minutes' - interval '5 minutes' END AS s,
                            CASE WHEN p.status = 'Ringing' THEN %(as_of)s::timestamptz - p.x * interval '40 seconds'
                                 ELSE %(as_of)s::timestamptz - p.x * interval '110 minutes' END AS u) AS r
"""


def prepare(run: Run) -> None:
    a = run.admin
    for fn, what in (("reap_call_timeouts(integer,interval,interval,timestamptz)", "the reaper"),
                     ("call_reaper_phases()", "the phase table the bench builds its statements from")):
        if a.execute("SELECT to_regprocedure(%s)", (f"messenger.{fn}",)).fetchone()[0] is None:
            sys.exit(f"bench: messenger.{fn} ({what}) is not deployed in this database")
    # The scheduled job must not compete for the single-runner lock while we measure; paused
    # (the DBA's verb) rather than unscheduled, so the idle-WAL part can let it run as deployed.
    if a.execute("SELECT count(*) FROM pg_extension WHERE extname = 'pg_cron'").fetchone()[0]:
        a.execute("SELECT messenger.pause_call_reaper()")
        run.scheduled = a.execute("SELECT count(*) FROM cron.job"
                                  " WHERE jobname = messenger.call_reaper_job_name('reaper') AND active"
                                  ).fetchone()[0] == 1
    if a.execute("SELECT count(*) FROM messenger.call_sessions").fetchone()[0]:
        sys.exit("bench: messenger.call_sessions is not empty; run the bench on a throwaway database")
    partitioned = a.execute("SELECT relkind = 'p' FROM pg_class"
                            " WHERE oid = 'messenger.call_sessions'::regclass").fetchone()[0]
    if partitioned != run.args.partitioned:
        sys.exit(f"bench: messenger.call_sessions is {'' if partitioned else 'not '}partitioned, and"
                 f" PARTITIONED={int(run.args.partitioned)}: bench/in-cluster builds the stand-in it asks for")
    if run.args.partitioned:
        add_months(run)


def add_months(run: Run) -> None:
    """The months the bench seeds, made as pg_partman's maintenance makes partitions.

    The partitioned stand-in (bench/in-cluster: stand-in/messenger_service.sql -v partitioned=on)
    has months around now(); the bench lives in 2098-2099. As the service's role, which owns the
    table and its partitions; in UTC, as the stand-in cut its months.
    """
    log("making the bench's months in the partitioned stand-in (pg_partman)")
    with run.admin.transaction():
        run.admin.execute("SET LOCAL ROLE messenger_service")
        run.admin.execute("SET LOCAL TimeZone = 'UTC'")
        run.admin.execute(
            """SELECT partman.create_partition_time('messenger.call_sessions', ARRAY(
                   SELECT generate_series(date_trunc('month', %s::timestamptz), %s::timestamptz, interval '1 month')))""",
            (AS_OF - dt.timedelta(days=HISTORY_SPAN_DAYS) - RECENT - dt.timedelta(days=31),
             AS_OF + dt.timedelta(days=31)),
        )


def grow_history(run: Run, target: int) -> None:
    n = target - run.history
    if n <= 0:
        return
    t0 = time.perf_counter()
    while n > 0:
        chunk = min(1_000_000, n)
        run.admin.execute(HISTORY_SQL, {"n": chunk, "end": AS_OF - RECENT,
                                        "span": dt.timedelta(days=HISTORY_SPAN_DAYS)})
        n -= chunk
        run.history += chunk
        log(f"history: {run.history:,} calls")
    run.admin.execute("VACUUM (ANALYZE, INDEX_CLEANUP ON) messenger.call_sessions")
    run.seeding_s += time.perf_counter() - t0


def reset_recent(run: Run, ringing: int, answered: int, live: int) -> None:
    """Replace the calls after the history (backlog + live ones) and empty the outbox."""
    t0 = time.perf_counter()
    a = run.admin
    a.execute("DELETE FROM messenger.call_sessions WHERE started_at > %s", (AS_OF - RECENT,))
    a.execute("TRUNCATE messenger.realtime_outbox, messenger.call_reaper_runs, messenger.call_reaper_quarantine")
    a.execute(RINGING_DUE_SQL, {"n": ringing, "as_of": AS_OF})
    a.execute(ANSWERED_STALE_SQL, {"n": answered, "as_of": AS_OF})
    a.execute(LIVE_SQL, {"n": live, "as_of": AS_OF, "long": run.args.pw_long})
    # INDEX_CLEANUP ON: on a big table, VACUUM skips index vacuuming when under 2 % of the heap
    # pages hold dead rows (PostgreSQL 14+), which at 10M calls left the previous drain's dead
    # entries in the partial indexes for every following cycle to walk.
    a.execute("VACUUM (ANALYZE, INDEX_CLEANUP ON) messenger.call_sessions, messenger.realtime_outbox")
    a.execute("CHECKPOINT")
    run.seeding_s += time.perf_counter() - t0


def backlog_split(backlog: int) -> dict[str, int]:
    """Overdue calls seeded per status: RINGING_DUE_SQL's and ANSWERED_STALE_SQL's."""
    return {"Ringing": backlog // 2, "Answered": backlog - backlog // 2}


def reset_backlog(run: Run, live: int | None = None) -> None:
    """The full BACKLOG with LIVE (or live) calls beside it."""
    split = backlog_split(run.args.backlog)
    reset_recent(run, split["Ringing"], split["Answered"], run.args.live if live is None else live)


def check_drained(run: Run, name: str) -> None:
    """Nothing due is left, every closed call got its outbox rows, no live call was touched."""
    a = run.admin
    seeded = backlog_split(run.args.backlog)
    left = rows_want = 0
    for ph in run.phases:
        left += a.execute("SELECT count(*) FROM messenger.call_sessions AS c WHERE c.started_at > %s AND c.status = %s"
                          "   AND messenger.call_is_due(c.status, c.started_at, c.updated_at, %s)",
                          (AS_OF - RECENT, ph.status, ph.cutoff)).fetchone()[0]
        rows_want += seeded[ph.status] * ph.outbox_rows_per_call
    rows = a.execute("SELECT count(*) FROM messenger.realtime_outbox").fetchone()[0]
    live = a.execute("SELECT count(*) FROM messenger.call_sessions WHERE started_at > %s AND status = ANY(%s)",
                     (AS_OF - RECENT, [ph.status for ph in run.phases])).fetchone()[0]
    if left or rows != rows_want or live != run.args.live:
        sys.exit(f"bench: {name} left {left} overdue calls, wrote {rows} outbox rows (want {rows_want}),"
                 f" {live} live calls (want {run.args.live})")

