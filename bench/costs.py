"""What a drain cost, in counted units the machine's noise cannot move."""

from __future__ import annotations

import os
import pathlib

import psycopg

# MultiXacts created: a row locked in one (sub)transaction and updated in another gets one.
# The age of datminmxid grows by one per MultiXact (autovacuum is off meanwhile).
MXID_AGE = "SELECT mxid_age(datminmxid) FROM pg_database WHERE datname = current_database()"


def find_server_log(admin: psycopg.Connection) -> pathlib.Path | None:
    """The file the server writes its log to: bench/in-cluster passes pg_virtualenv's (the
    cluster logs to stderr, redirected by pg_ctlcluster); with logging_collector on,
    pg_current_logfile() names it."""
    env = os.environ.get("BENCH_SERVER_LOG")
    if env and pathlib.Path(env).is_file():
        return pathlib.Path(env)
    name, data = admin.execute("SELECT pg_current_logfile(), current_setting('data_directory')").fetchone()
    if name:
        path = pathlib.Path(name) if name.startswith("/") else pathlib.Path(data) / name
        if path.is_file():
            return path
    return None


def counted(run, fn) -> dict:
    """Runs one contestant and adds WAL bytes (insert LSN delta), server-log bytes (the log
    file's growth), shared buffers and executor ms (pg_stat_statements, top-level statements: a
    function's figure includes its nested statements) and MultiXacts created."""
    a = run.admin
    have_pgss = run.statements_reset()
    log0 = run.server_log.stat().st_size if run.server_log else None
    lsn0 = a.execute("SELECT pg_current_wal_insert_lsn()").fetchone()[0]
    mx0 = a.execute(MXID_AGE).fetchone()[0]
    r = fn()
    r["wal"] = a.execute("SELECT pg_current_wal_insert_lsn() - %s::pg_lsn", (lsn0,)).fetchone()[0]
    r["multixacts"] = a.execute(MXID_AGE).fetchone()[0] - mx0
    r["log"] = None if log0 is None else run.server_log.stat().st_size - log0
    r["buffers"] = r["exec_ms"] = None
    if have_pgss:
        # Not 'CALL ...': pg_cron's jobs are the only CALLs, and the lock warden's minute-long one
        # now and then ends inside a contestant's window (peer@1000 once showed 1,453 executor
        # ms per 398 ms cycle).
        r["buffers"], r["exec_ms"] = a.execute(
            "SELECT sum(shared_blks_hit + shared_blks_read), sum(total_exec_time) FROM pg_stat_statements"
            " WHERE toplevel AND query NOT LIKE '%%pg_current_wal_insert_lsn%%'"
            "   AND query NOT LIKE '%%pg_stat_statements%%' AND query NOT LIKE '%%mxid_age%%'"
            "   AND query NOT LIKE 'CALL %%'").fetchone()
    return r


def per_call(r: dict, key: str, backlog: int) -> float:
    v = r.get(key)
    return float("nan") if v is None else float(v) / backlog
