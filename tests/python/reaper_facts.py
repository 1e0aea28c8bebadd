"""Names the tests and tools share with the deployed schema, each written once here.

The single-runner lock key itself lives in SQL only (messenger.call_reaper_lock_key(),
deploy/functions/call_reaper_lock_key.sql): Python sends the expressions below instead of a
copy of the number, so a test cannot drift from the key the reaper takes.
The bench does not import it: with a connection from the start, it calls the SQL homes
(messenger.call_reaper_lock_key(), messenger.call_reaper_job_name('reaper')) itself.
"""

from pathlib import Path

# SQL expressions: the key, and "this pg_locks row (alias l) is the reaper's lock".
LOCK_KEY_SQL = "messenger.call_reaper_lock_key()"
LOCK_ROW_SQL = ("l.locktype = 'advisory' AND l.objsubid = 1"
                " AND (l.classid::bigint << 32 | l.objid::bigint) = messenger.call_reaper_lock_key()")

# pg_cron jobs (deploy/cron/*.sql).
JOB_NAME = "messenger-call-timeout-reaper"
PURGE_JOB_NAME = "messenger-call-reaper-purge"
WARDEN_JOB_NAME = "messenger-call-reaper-warden"

# Roles (deploy/roles/*.sql).
JOB_ROLE = "messenger_call_reaper"
OWNER_ROLE = "messenger_call_reaper_owner"
MONITOR_ROLE = "messenger_call_reaper_monitor"
OPERATOR_ROLE = "messenger_call_reaper_operator"


def server_settings() -> dict[str, str]:
    """The reaper's server settings, from server.conf at the repository root (its one home)."""
    path = Path(__file__).resolve().parents[2] / "server.conf"
    settings = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            key, value = (part.strip() for part in line.split("=", 1))
            settings[key] = value
    return settings
