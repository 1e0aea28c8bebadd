"""What the reaper's role names held before the deploy, the revert gives back exactly.

The deploy scripts grant the reaper's owner role its table privileges, set the job role's
timeouts and grant and revoke around every routine change, whether or not the product held any
of that already; their reverts revoke and reset by name. So the first change
(requires/messenger_tables) finds, after its check, what those role names hold
(messenger.call_reaper_found), and its revert, the last of a full revert, gives it back. Checked
on product databases whose reaper roles exist already (the deploy into the pg_cron database made
them), deployed without pg_cron (the pg_cron path, USAGE on schema cron and the job role's
setting in that database: tests/managed/test_found_in_cron_database.py):
- a table grant, a column grant and the job role's statement_timeout for every database and for
  this one, all set by the product before the deploy, are back after a full revert (aclitems and
  setconfig compared);
- the owner role's CREATE on schema messenger, which every routine change of the deploy revokes,
  is back;
- the snapshot is the deploying role's, with no grant to anyone.
"""

from __future__ import annotations

import psycopg
from adoption_support import (
    create_product_database,
    drop_product_database,
    product_objects,
    reaper_objects,
    role_facts,
    sqitch,
)
from reaper_facts import JOB_ROLE, OWNER_ROLE

NO_CRON = ("--set", "scheduler=none")


def test_revert_gives_back_the_grants_and_settings_the_product_gave_the_reaper_roles(conn):
    db = "found_grants"
    dsn = create_product_database(conn, db, "text")
    (job_settings,) = conn.execute(
        "SELECT setconfig FROM pg_db_role_setting WHERE setdatabase = 0 AND setrole = %s::regrole",
        [JOB_ROLE]).fetchone()
    try:
        with psycopg.connect(dsn, autocommit=True) as product:
            product.execute(f"""
                GRANT SELECT ON messenger.call_sessions TO {OWNER_ROLE};
                GRANT UPDATE (answered_at) ON messenger.call_sessions TO {OWNER_ROLE};
                ALTER ROLE {JOB_ROLE} SET statement_timeout = '7s';
                ALTER ROLE {JOB_ROLE} IN DATABASE {db} SET statement_timeout = '5s'""")
            objects_before, roles_before = product_objects(product), role_facts(product)
            sqitch("deploy", db, *NO_CRON)
            # The released scripts did overwrite them: what the revert has to give back.
            assert product.execute(
                "SELECT setconfig FROM pg_db_role_setting WHERE setdatabase = 0 AND setrole = %s::regrole",
                [JOB_ROLE]).fetchone()[0][0] == "statement_timeout=30s"
            sqitch("revert", db, "-y")
            assert product_objects(product) == objects_before, "revert took a grant the product had given"
            assert role_facts(product) == roles_before, "revert left a role setting the deploy changed"
            # The product's own grants to those roles stay; nothing else of the reaper's does.
            assert [o for o in reaper_objects(product) if "grant to" not in o] == []
    finally:
        # Roles are cluster-wide: the deploy in the pg_cron database set these, the rest of the
        # suite runs with them.
        conn.execute(f"ALTER ROLE {JOB_ROLE} RESET ALL")
        for entry in job_settings or []:
            name, value = entry.split("=", 1)
            conn.execute(f"ALTER ROLE {JOB_ROLE} SET {name} = '{value}'")
        drop_product_database(conn, db)


def test_revert_gives_back_the_owner_roles_create_on_messenger(conn):
    """Every routine change grants the owner role CREATE on messenger for its ALTER ... OWNER and
    revokes it; on a fresh deploy that already happened before any check could see the grant."""
    db = "found_create"
    dsn = create_product_database(conn, db, "text")
    with psycopg.connect(dsn, autocommit=True) as product:
        product.execute(f"GRANT CREATE ON SCHEMA messenger TO {OWNER_ROLE}")
        objects_before = product_objects(product)
        sqitch("deploy", db, *NO_CRON)
        sqitch("revert", db, "-y")
        assert product_objects(product) == objects_before, "revert did not give back CREATE on messenger"
        assert product.execute(
            "SELECT x::text FROM pg_namespace AS n CROSS JOIN aclexplode(n.nspacl) AS x"
            " WHERE n.nspname = 'messenger' AND x.grantee = %s::regrole", [OWNER_ROLE]
        ).fetchall() == [(f"({_oid(product, 'messenger_service')},{_oid(product, OWNER_ROLE)},CREATE,f)",)]
    drop_product_database(conn, db)


def _oid(conn: psycopg.Connection, role: str) -> int:
    return conn.execute("SELECT %s::regrole::oid", [role]).fetchone()[0]


def test_the_snapshot_is_the_deployers_alone(conn):
    db = "found_owner"
    dsn = create_product_database(conn, db, "text")
    with psycopg.connect(dsn, autocommit=True) as product:
        # Default privileges of the schema would hand a new table of the deployer's to the app.
        product.execute("ALTER DEFAULT PRIVILEGES IN SCHEMA messenger GRANT SELECT, INSERT ON TABLES TO messenger_app")
        sqitch("deploy", db, *NO_CRON)
        owner, acl = product.execute(
            "SELECT pg_get_userbyid(relowner), relacl::text[] FROM pg_class"
            " WHERE oid = 'messenger.call_reaper_found'::regclass").fetchone()
        assert owner == product.execute("SELECT current_user").fetchone()[0]
        assert [a for a in (acl or []) if not a.startswith(f"{owner}=")] == [], acl
        found = product.execute(
            "SELECT role, kind FROM messenger.call_reaper_found WHERE kind = 'role' ORDER BY role").fetchall()
        assert (JOB_ROLE, "role") in found and (OWNER_ROLE, "role") in found
        # verify runs the check only: it leaves the snapshot as it is.
        rows = product.execute("SELECT count(*) FROM messenger.call_reaper_found").fetchone()
        sqitch("verify", db, *NO_CRON)
        assert product.execute("SELECT count(*) FROM messenger.call_reaper_found").fetchone() == rows
        sqitch("revert", db, "-y")
        assert product.execute("SELECT to_regclass('messenger.call_reaper_found')").fetchone() == (None,)
    drop_product_database(conn, db)
