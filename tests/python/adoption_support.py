"""What the adoption tests share: throwaway databases holding the messenger service's stand-in
tables, sqitch runs against them, and a snapshot of everything of the product's a deploy or a
revert could touch.

The stand-in (stand-in/messenger_service.sql) plays the service's own migrations, plain or
partitioned by month with pg_partman; each test adds what a real product has beside it (a column
and an index of its own, rows). `Writer` is the product writing meanwhile. The reaper is then
deployed with `--set scheduler=none` (only cron.database_name can hold pg_cron jobs, and these
databases are not it) or, for the pg_cron path, into that database (tests/managed/).
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

ROOT = Path(__file__).resolve().parents[2]

# Privileges are compared as the set they grant: a GRANT and its REVOKE leave an owner's implicit
# default written out, which grants exactly the same.
# Every fact of schema messenger that is not the reaper's own (its tables are call_reaper_*,
# its indexes ix_call_due and ux_realtime_outbox_call_event, its routines and its type), one
# text line each: what revert must give back exactly.
PRODUCT_OBJECTS_SQL = r"""
WITH rel AS (
    SELECT c.oid, c.relname, c.relkind, c.relowner, c.reloptions, c.relacl
      FROM pg_class AS c
     WHERE c.relnamespace = 'messenger'::regnamespace
       AND c.relname NOT LIKE 'call\_reaper\_%'
       AND c.relname NOT IN ('ix_call_due', 'ux_realtime_outbox_call_event')
       AND c.relname NOT LIKE '%\_ix\_call\_due'
       -- A partition made after the deploy gets its part of ix_call_due under a name of its own.
       AND coalesce(pg_partition_root(c.oid) <> to_regclass('messenger.ix_call_due'), true))
SELECT 'schema owner=' || pg_get_userbyid(n.nspowner) || ' acl='
       || (SELECT string_agg(x::text, ',' ORDER BY x::text) FROM aclexplode(coalesce(n.nspacl, acldefault('n'::"char", n.nspowner))) AS x)
  FROM pg_namespace AS n WHERE n.nspname = 'messenger'
UNION ALL
SELECT format('relation %s kind=%s owner=%s options=%s acl=%s', r.relname, r.relkind,
              pg_get_userbyid(r.relowner), r.reloptions,
              (SELECT string_agg(x::text, ',' ORDER BY x::text)
                 FROM aclexplode(coalesce(r.relacl, acldefault(CASE r.relkind WHEN 'S' THEN 's' ELSE 'r' END::"char", r.relowner))) AS x))
  FROM rel AS r
UNION ALL
SELECT format('column %s.%s type=%s notnull=%s default=%s acl=%s', r.relname, a.attname,
              format_type(a.atttypid, a.atttypmod), a.attnotnull,
              pg_get_expr(d.adbin, d.adrelid),
              (SELECT string_agg(x::text, ',' ORDER BY x::text) FROM aclexplode(a.attacl) AS x))
  FROM rel AS r JOIN pg_attribute AS a ON a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped
  LEFT JOIN pg_attrdef AS d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
 WHERE r.relkind IN ('r', 'p')
UNION ALL
SELECT format('index %s valid=%s comment=%s', pg_get_indexdef(i.indexrelid), i.indisvalid,
              obj_description(i.indexrelid, 'pg_class'))
  FROM pg_index AS i JOIN rel AS r ON r.oid = i.indexrelid
UNION ALL
SELECT format('constraint %s on %s: %s', k.conname, r.relname, pg_get_constraintdef(k.oid))
  FROM pg_constraint AS k JOIN rel AS r ON r.oid = k.conrelid
UNION ALL
SELECT format('trigger %s', pg_get_triggerdef(t.oid))
  FROM pg_trigger AS t JOIN rel AS r ON r.oid = t.tgrelid WHERE NOT t.tgisinternal
UNION ALL
SELECT format('type %s owner=%s labels=%s', t.typname, pg_get_userbyid(t.typowner),
              (SELECT string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder) FROM pg_enum AS e WHERE e.enumtypid = t.oid))
  FROM pg_type AS t
 WHERE t.typnamespace = 'messenger'::regnamespace AND t.typtype = 'e'
UNION ALL
SELECT format('routine %s', p.oid::regprocedure) FROM pg_proc AS p
 WHERE p.pronamespace = 'messenger'::regnamespace
   AND p.proowner = (SELECT n.nspowner FROM pg_namespace AS n WHERE n.nspname = 'messenger')
"""

# Every row of both tables, in key order, as one digest each (and the counts, for messages).
PRODUCT_ROWS_SQL = """
SELECT (SELECT count(*) FROM messenger.call_sessions),
       (SELECT md5(string_agg(c::text, E'\\n' ORDER BY c.call_id)) FROM messenger.call_sessions AS c),
       (SELECT count(*) FROM messenger.realtime_outbox),
       (SELECT md5(string_agg(o::text, E'\\n' ORDER BY o.id)) FROM messenger.realtime_outbox AS o)
"""

# What the reaper itself adds, wherever it is: what a revert or a failed deploy must leave none of.
REAPER_OBJECTS_SQL = r"""
SELECT c.relname::text FROM pg_class AS c
 WHERE c.relnamespace = 'messenger'::regnamespace
   AND (c.relname LIKE 'call\_reaper\_%' OR c.relname LIKE '%ix\_call\_due'
        OR c.relname = 'ux_realtime_outbox_call_event')
UNION ALL
SELECT p.oid::regprocedure::text FROM pg_proc AS p
 WHERE p.pronamespace = 'messenger'::regnamespace
   AND p.proowner <> (SELECT n.nspowner FROM pg_namespace AS n WHERE n.nspname = 'messenger')
UNION ALL
SELECT t.typname::text FROM pg_type AS t
 WHERE t.typnamespace = 'messenger'::regnamespace AND t.typname LIKE 'call\_reaper\_%'
UNION ALL
SELECT 'grant to ' || r.rolname FROM pg_class AS c CROSS JOIN LATERAL aclexplode(c.relacl) AS a
  JOIN pg_roles AS r ON r.oid = a.grantee
 WHERE c.relnamespace = 'messenger'::regnamespace AND r.rolname LIKE 'messenger\_call\_reaper%'
UNION ALL
SELECT 'column grant to ' || r.rolname FROM pg_attribute AS att
  JOIN pg_class AS c ON c.oid = att.attrelid CROSS JOIN LATERAL aclexplode(att.attacl) AS a
  JOIN pg_roles AS r ON r.oid = a.grantee
 WHERE c.relnamespace = 'messenger'::regnamespace AND r.rolname LIKE 'messenger\_call\_reaper%'
"""


# What a deploy may not leave changed on the reaper's roles when it is refused, and a revert must
# give back: their attributes, memberships both ways and settings, one line each.
ROLE_FACTS_SQL = r"""
SELECT format('role %s super=%s bypassrls=%s replication=%s login=%s', r.rolname, r.rolsuper,
              r.rolbypassrls, r.rolreplication, r.rolcanlogin)
  FROM pg_roles AS r WHERE r.rolname LIKE 'messenger\_call\_reaper%'
UNION ALL
SELECT format('member %s of %s', pg_get_userbyid(m.member), pg_get_userbyid(m.roleid))
  FROM pg_auth_members AS m
 WHERE pg_get_userbyid(m.member) LIKE 'messenger\_call\_reaper%' OR pg_get_userbyid(m.roleid) LIKE 'messenger\_call\_reaper%'
UNION ALL
SELECT format('setting %s %s %s', s.setdatabase, pg_get_userbyid(s.setrole), s.setconfig)
  FROM pg_db_role_setting AS s WHERE pg_get_userbyid(s.setrole) LIKE 'messenger\_call\_reaper%'
"""


def role_facts(conn: psycopg.Connection) -> list[str]:
    return sorted(str(r[0]) for r in conn.execute(ROLE_FACTS_SQL))


def dsn_for(database: str, **params: str) -> str:
    """The PG* variables' server, another database (and user)."""
    return make_conninfo("", dbname=database, **params)


def create_product_database(admin: psycopg.Connection, name: str, types: str = "text",
                            partitioned: bool = False, active_index: bool = True) -> str:
    """A fresh database holding the stand-in product tables (dropped first if left over);
    partitioned: call_sessions by month with pg_partman, its maintenance job in pg_cron;
    active_index=False: without the service's index of active calls (ix_call_active), so the
    deploy builds the reaper's ix_call_due instead of using it."""
    drop_product_database(admin, name)
    admin.execute(sql.SQL("CREATE DATABASE {} TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C.UTF-8'")
                  .format(sql.Identifier(name)))
    psql(name, "-v", f"types={types}", "-v", f"partitioned={'on' if partitioned else 'off'}",
         "-v", f"active_index={'on' if active_index else 'off'}",
         "-f", str(ROOT / "stand-in" / "messenger_service.sql"))
    return dsn_for(name)


@contextmanager
def deployed_without_cron(dsn: str, name: str) -> Iterator[psycopg.Connection]:
    """A fresh database holding the stand-in tables and the reaper deployed without pg_cron
    (`--set scheduler=none`), connected as the suite's superuser; dropped afterwards."""
    with psycopg.connect(dsn, autocommit=True) as admin:
        product_dsn = create_product_database(admin, name, "text")
    sqitch("deploy", name, "--set", "scheduler=none")
    with psycopg.connect(product_dsn, autocommit=True) as conn:
        yield conn
    with psycopg.connect(dsn, autocommit=True) as admin:
        drop_product_database(admin, name)


def partman_job_name(database: str) -> str:
    """The pg_cron job of pg_partman's maintenance the partitioned stand-in schedules."""
    return f"partman-maintenance-{database}"


def drop_product_database(admin: psycopg.Connection, name: str) -> None:
    """Drops it, and the partitioned stand-in's job, which lives in cron.database_name (admin's)."""
    if admin.execute("SELECT to_regclass('cron.job') IS NOT NULL").fetchone()[0]:
        admin.execute("SELECT cron.unschedule(jobid) FROM cron.job WHERE jobname = %s", (partman_job_name(name),))
    admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def psql(database: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PGDATABASE": database}
    done = subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", *args],
                          env=env, capture_output=True, text=True, check=False)
    if check:
        assert done.returncode == 0, done.stdout + done.stderr
    return done


def sqitch(verb: str, database: str, *args: str, cwd: Path = ROOT, env: dict[str, str] | None = None,
           check: bool = True) -> subprocess.CompletedProcess[str]:
    """sqitch VERB db:pg:DATABASE ARGS, host and user from the PG* variables (or env)."""
    command = ["sqitch", verb, *args, f"db:pg:{database}"]
    done = subprocess.run(command, cwd=cwd, env=env or dict(os.environ),
                          capture_output=True, text=True, check=False)
    if check:
        assert done.returncode == 0, f"{' '.join(command)}\n{done.stdout}{done.stderr}"
    return done


def cron_version(version: str) -> tuple[int, ...]:
    """A pg_cron version as numbers, whole: '1.4-1' -> (1, 4, 1). [:2] is what the deploy's
    schedule goes by (1.5+: seconds schedules)."""
    return tuple(int(part) for part in version.replace("-", ".").split("."))


def cron_extversion(conn: psycopg.Connection) -> tuple[int, ...]:
    """pg_cron's pg_extension.extversion in conn's database, as cron_version()."""
    (extversion,) = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'pg_cron'").fetchone()
    return cron_version(extversion)


def product_objects(conn: psycopg.Connection) -> list[str]:
    return sorted(str(r[0]) for r in conn.execute(PRODUCT_OBJECTS_SQL))


def product_rows(conn: psycopg.Connection) -> tuple:
    return tuple(conn.execute(PRODUCT_ROWS_SQL).fetchone())


def reaper_objects(conn: psycopg.Connection) -> list[str]:
    return sorted(str(r[0]) for r in conn.execute(REAPER_OBJECTS_SQL))


class Writer(threading.Thread):
    """The product writing while a deploy runs: every 5 ms a new call, the previous one's
    updated_at moved and an outbox row, on its own connection, each statement timed (the times
    are printed, not asserted). Its session has lock_timeout = lock_timeout_s: a statement that
    waits longer for a lock the deploy holds raises 55P03, and the first error ends the writer
    and is kept in .error for the test to assert on."""

    def __init__(self, dsn: str, lock_timeout_s: float) -> None:
        super().__init__(daemon=True)
        self.dsn = dsn
        self.lock_timeout_ms = round(lock_timeout_s * 1000)
        self.stop = threading.Event()
        self.waits: list[float] = []
        self.error: psycopg.Error | None = None

    def timed(self, conn: psycopg.Connection, query: str, params: tuple) -> None:
        started = time.monotonic()
        conn.execute(query, params)
        self.waits.append(time.monotonic() - started)

    def run(self) -> None:
        try:
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                conn.execute(f"SET lock_timeout = {self.lock_timeout_ms}")
                previous = None
                while not self.stop.is_set():
                    call = uuid.uuid4()
                    self.timed(conn, """
                        INSERT INTO messenger.call_sessions
                               (call_id, caller_user_id, callee_user_id, media_type, status, started_at, updated_at)
                        VALUES (%s, gen_random_uuid(), gen_random_uuid(), 'Audio', 'Ringing', now(), now())""", (call,))
                    if previous is not None:
                        self.timed(conn, "UPDATE messenger.call_sessions SET updated_at = now() WHERE call_id = %s",
                                   (previous,))
                    self.timed(conn, """
                        INSERT INTO messenger.realtime_outbox (kind, target_kind, target_id, reference_id, payload)
                        VALUES ('MessageCreated', 'User', 'user:' || gen_random_uuid(), %s, '{}')""", (call,))
                    previous = call
                    time.sleep(0.005)
        except psycopg.Error as exc:  # reported by the test, not lost in the thread
            self.error = exc
