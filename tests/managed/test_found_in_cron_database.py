"""The job role's USAGE on schema cron and its statement_timeout in the pg_cron database, given by
the product before the deploy, are back after a full revert (tests/python/test_left_as_found.py
has the rest of what the deploy finds; these two exist only where pg_cron is).

The released cron/call_reaper deploy grants the job role USAGE on schema cron for its
cron.schedule and revokes it, and its revert does the same around cron.unschedule and resets the
role's statement_timeout in this database (set to 90 s on pg_cron 1.4): by name, whatever the
role held before. scripts/test-in-cluster runs this file while the reaper is reverted from the
pg_cron database; the job role is made here as a DBA would have made it, and dropped again.
"""

from __future__ import annotations

import sys
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
from adoption_support import role_facts, sqitch
from reaper_facts import JOB_NAME, JOB_ROLE

DB = "messenger"            # cron.database_name (server.conf)

CRON_ACL_SQL = """
SELECT x::text FROM pg_namespace AS n CROSS JOIN LATERAL aclexplode(n.nspacl) AS x
 WHERE n.nspname = 'cron' ORDER BY 1
"""


def test_revert_gives_back_the_job_roles_cron_usage_and_its_setting_in_this_database():
    with psycopg.connect("", dbname=DB, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM pg_proc WHERE proname = 'reap_call_timeouts'").fetchone() == (0,), \
            "run me while the reaper is reverted (scripts/test-in-cluster)"
        assert conn.execute("SELECT to_regrole(%s)", [JOB_ROLE]).fetchone() == (None,)
        try:
            conn.execute(f"""
                CREATE ROLE {JOB_ROLE} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT;
                GRANT USAGE ON SCHEMA cron TO {JOB_ROLE};
                ALTER ROLE {JOB_ROLE} SET statement_timeout = '7s';
                ALTER ROLE {JOB_ROLE} IN DATABASE {DB} SET statement_timeout = '5s'""")
            cron_before, roles_before = conn.execute(CRON_ACL_SQL).fetchall(), role_facts(conn)
            sqitch("deploy", DB)
            assert conn.execute("SELECT count(*) FROM cron.job WHERE jobname = %s AND username = %s",
                                [JOB_NAME, JOB_ROLE]).fetchone() == (1,)
            sqitch("revert", DB, "-y")
            assert conn.execute(CRON_ACL_SQL).fetchall() == cron_before, "revert took USAGE on cron from the job role"
            assert role_facts(conn) == roles_before, "revert left the job role's settings changed"
        finally:
            conn.execute(f"""
                DO $$ BEGIN
                    IF to_regrole('{JOB_ROLE}') IS NOT NULL THEN
                        REVOKE USAGE ON SCHEMA cron FROM {JOB_ROLE};
                        DROP ROLE {JOB_ROLE};
                    END IF;
                END $$""")
