"""Connection strings made safe to print: the exporter's logs and scripts/reaper-loop's lines.

Only psycopg, on purpose: scripts/reaper-loop runs on application hosts, where the exporter's
prometheus_client has no business, and imports this module instead of keeping a copy of it.
"""

from __future__ import annotations

import os

from psycopg.conninfo import conninfo_to_dict, make_conninfo

MASK = "********"


def mask_dsn(dsn: str) -> str:
    """The DSN with any password replaced, safe to log (URL or key=value form).

    Raises psycopg.ProgrammingError for a malformed DSN; its message may quote the password.
    """
    if not dsn:
        return "'' (libpq PG* environment)"
    params = conninfo_to_dict(dsn)
    if "password" in params:
        params["password"] = MASK
    return make_conninfo("", **params)


def redact(text: str, dsn: str) -> str:
    """text with every password the connection may use (the DSN's, PGPASSWORD) masked.

    For libpq's own messages, which name the host and port they tried; a DSN malformed in a way
    that still parses can push a piece of its password into one of those. dsn must parse.
    """
    for secret in (conninfo_to_dict(dsn).get("password") if dsn else None,
                   os.environ.get("PGPASSWORD")):
        if secret:
            text = text.replace(secret, MASK)
    return text
